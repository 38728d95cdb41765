// Configuration from JSON files and the environment: values, errors that name
// the file, key and reason, and warnings for what is ignored.
#include "support.hpp"

// What this suite checks from the inside.
#include <npuprof/control/config_keys.hpp>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const npuprof::config_error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a JSON config sets every key, with msprof_tx as an alias of mstx") {
  const auto cfg = npuprof::config::from_json(R"({
    "msprof_tx": false,
    "mstx_domain_include": ["kernels", "comm"],
    "output_dir": "/tmp/out",
    "worker_name": "rank0",
    "buffer_size_kb": 1024,
    "chunk_size_kb": 16,
    "flush_interval_ms": 50
  })");
  CHECK(cfg.mstx == false);
  CHECK(cfg.domain_include == std::vector<std::string>{"kernels", "comm"});
  CHECK(cfg.output_dir == "/tmp/out");
  CHECK(cfg.worker_name == "rank0");
  CHECK(cfg.buffer_size_kb == 1024);
  CHECK(cfg.chunk_size_kb == 16);
  CHECK(cfg.flush_interval_ms == 50);
  CHECK(cfg.warnings.empty());
}

TEST_CASE("parse errors name the source, line and column") {
  const std::string msg = error_of([] { npuprof::config::from_json("{\n  \"mstx\": true,\n  oops\n}", "cfg.json"); });
  CHECK_MESSAGE(contains(msg, "cfg.json:3:3: invalid JSON"), msg);
  // Found by fuzzing: a number too large for a double is an error too, not a crash.
  const std::string huge = error_of([] { npuprof::config::from_json("888E8888888", "cfg.json"); });
  CHECK_MESSAGE(contains(huge, "cfg.json: invalid JSON: number overflow"), huge);
}

TEST_CASE("wrong types name the key and say what was expected") {
  CHECK(contains(error_of([] { npuprof::config::from_json(R"({"mstx": "yes"})", "a.json"); }),
                 "a.json: key 'mstx': expected true or false, got string"));
  CHECK(contains(error_of([] { npuprof::config::from_json(R"({"mstx_domain_exclude": "debug"})", "a.json"); }),
                 "a.json: key 'mstx_domain_exclude': expected an array of domain names, got string"));
  CHECK(contains(error_of([] { npuprof::config::from_json(R"({"mstx_domain_include": ["a", 3]})", "a.json"); }),
                 "key 'mstx_domain_include': element 1: expected a string, got number"));
  CHECK(contains(error_of([] { npuprof::config::from_json(R"({"buffer_size_kb": -5})", "a.json"); }),
                 "key 'buffer_size_kb': must be between 1 and 1073741824, got -5"));
  CHECK(contains(error_of([] { npuprof::config::from_json(R"({"chunk_size_kb": 0})", "a.json"); }),
                 "key 'chunk_size_kb': must be between 1 and 4096, got 0"));
  CHECK(contains(error_of([] { npuprof::config::from_json(R"({"mstx": true, "msprof_tx": false})", "a.json"); }),
                 "conflicts with the value given for its alias"));
  CHECK(contains(error_of([] { npuprof::config::from_json("[1, 2]", "a.json"); }),
                 "a.json: expected a JSON object at the top level, got array"));
}

TEST_CASE("unknown keys give a warning that suggests the closest key") {
  const auto cfg = npuprof::config::from_json(R"({"msxt": true, "colour": 3})", "b.json");
  REQUIRE(cfg.warnings.size() == 2);
  CHECK(contains(cfg.warnings[0] + cfg.warnings[1], "b.json: unknown key 'msxt' (ignored); did you mean 'mstx'?"));
  CHECK(contains(cfg.warnings[0] + cfg.warnings[1], "b.json: unknown key 'colour' (ignored)"));
}

TEST_CASE("NPUPROF_CONFIG names a file; the environment overrides it") {
  test::temp_dir dir;
  const auto file = dir.path / "npuprof.json";
  std::ofstream(file) << R"({"mstx_domain_exclude": ["debug"], "output_dir": "from-file", "chunk_size_kb": 8})";
  test::scoped_env config_file("NPUPROF_CONFIG", file.c_str());
  test::scoped_env out("NPUPROF_OUTPUT_DIR", "from-env");
  test::scoped_env exc("NPUPROF_DOMAIN_EXCLUDE", nullptr);
  test::scoped_env inc("NPUPROF_DOMAIN_INCLUDE", nullptr);
  test::scoped_env mstx("NPUPROF_MSTX", nullptr);
  const auto cfg = npuprof::config::from_env();
  CHECK(cfg.domain_exclude == std::vector<std::string>{"debug"});
  CHECK(cfg.output_dir == "from-env");
  CHECK(cfg.chunk_size_kb == 8);
  CHECK(contains(cfg.source, file.string()));
}

TEST_CASE("a missing config file and bad environment values are clear errors") {
  {
    test::scoped_env config_file("NPUPROF_CONFIG", "/nonexistent/npuprof.json");
    CHECK(contains(error_of([] { npuprof::config::from_env(); }),
                   "/nonexistent/npuprof.json: cannot open config file: No such file or directory"));
  }
  test::scoped_env config_file("NPUPROF_CONFIG", nullptr);
  {
    test::scoped_env mstx("NPUPROF_MSTX", "maybe");
    CHECK(contains(error_of([] { npuprof::config::from_env(); }),
                   "environment variable NPUPROF_MSTX: expected 1/0, true/false, on/off or yes/no, got 'maybe'"));
  }
  {
    test::scoped_env size("NPUPROF_BUFFER_SIZE_KB", "12abc");
    CHECK(contains(error_of([] { npuprof::config::from_env(); }),
                   "environment variable NPUPROF_BUFFER_SIZE_KB (buffer_size_kb): expected an integer between 1 and "
                   "1073741824, got '12abc'"));
  }
  {
    test::scoped_env inc("NPUPROF_DOMAIN_INCLUDE", " kernels , comm ,");
    CHECK(npuprof::config::from_env().domain_include == std::vector<std::string>{"kernels", "comm"});
  }
}

namespace {

// A numeric setting, where it comes from, and its range as messages say it.
struct numeric_setting {
  const char* key;  // JSON
  const char* env;  // environment variable, or null
  const char* range;
};

const numeric_setting numeric_settings[] = {
    {"buffer_size_kb", "NPUPROF_BUFFER_SIZE_KB", "between 1 and 1073741824"},
    {"chunk_size_kb", "NPUPROF_CHUNK_SIZE_KB", "between 1 and 4096"},
    {"flush_interval_ms", "NPUPROF_FLUSH_INTERVAL_MS", "between 1 and 60000"},
    {"device_events_per_stream", "NPUPROF_DEVICE_EVENTS_PER_STREAM", "between 2 and 65536"},
    {"device_wait_ms", "NPUPROF_DEVICE_WAIT_MS", "between 0 and 600000"},
    {"rank", "RANK", "between -1 and 1000000"},
    {"local_rank", "LOCAL_RANK", "between -1 and 1000000"},
    {"world_size", "WORLD_SIZE", "between -1 and 1000000"},
    {"min_duration_us", "NPUPROF_MIN_DURATION_US", "between 0 and 3600000000"},
    {"host_sys_interval_ms", "NPUPROF_HOST_SYS_INTERVAL_MS", "between 1 and 3600000"},
};

const numeric_setting& setting(const std::string& key) {
  for (const numeric_setting& s : numeric_settings) {
    if (key == s.key) return s;
  }
  FAIL("no setting " << key);
  return numeric_settings[0];
}

// The error from_env() gives with only `name` set to `value`.
std::string env_error(const char* name, const char* value) {
  test::scoped_env config_file("NPUPROF_CONFIG", nullptr);
  test::scoped_env v(name, value);
  return error_of([] { npuprof::config::from_env(); });
}

}  // namespace

TEST_CASE("numeric settings that would wrap or overflow are errors naming the key, the value and the range") {
  // Values that once became others: 4294967297 -> 1, 4294967298 -> 2,
  // 2^32 -> 0, 2^64-1 -> -1, and a threshold that overflowed in nanoseconds.
  const std::pair<const char*, const char*> wrapping[] = {
      {"flush_interval_ms", "4294967297"},
      {"device_events_per_stream", "4294967298"},
      {"device_wait_ms", "4294967296"},
      {"rank", "18446744073709551615"},
      {"local_rank", "18446744073709551615"},
      {"world_size", "4294967295"},
      {"min_duration_us", "9223372036854775"},
      {"min_duration_us", "3600000001"},
      {"host_sys_interval_ms", "4294967297"},
      {"buffer_size_kb", "18446744073709551615"},
      {"chunk_size_kb", "4294967297"},
      {"rank", "-2"},
      {"device_wait_ms", "600001"},
  };
  for (const auto& w : wrapping) {
    const char* key = w.first;
    const char* value = w.second;
    CAPTURE(key);
    CAPTURE(value);
    const numeric_setting& s = setting(key);
    const std::string json =
        error_of([&] { npuprof::config::from_json(std::string("{\"") + key + "\": " + value + "}", "n.json"); });
    CHECK_EQ(json, std::string("n.json: key '") + key + "': must be " + s.range + ", got " + value);
    CHECK_EQ(env_error(s.env, value), std::string("environment variable ") + s.env + " (" + key + "): must be " +
                                          s.range + ", got '" + value + "'");
  }
  // Too large even for 64 bits: from the environment a range error, in
  // JSON a number that is not an integer any more.
  CHECK_EQ(env_error("NPUPROF_MIN_DURATION_US", "99999999999999999999999"),
           "environment variable NPUPROF_MIN_DURATION_US (min_duration_us): must be between 0 and 3600000000, "
           "got '99999999999999999999999'");
  CHECK(contains(error_of([] { npuprof::config::from_json(R"({"flush_interval_ms": 1e10})", "n.json"); }),
                 "n.json: key 'flush_interval_ms': expected an integer between 1 and 60000, got 10000000000.0"));
  CHECK_EQ(env_error("NPUPROF_FLUSH_INTERVAL_MS", " 5"),
           "environment variable NPUPROF_FLUSH_INTERVAL_MS (flush_interval_ms): expected an integer between 1 and "
           "60000, got ' 5'");
  CHECK_EQ(error_of([] {
             npuprof::config::from_json(R"({"flight_recorder": {"memory_mb": 18446744073709551615}})", "f.json");
           }),
           "f.json: key 'flight_recorder.memory_mb': must be between 1 and 1048576, got 18446744073709551615");
  CHECK_EQ(error_of([] { npuprof::config::from_json(R"({"flight_recorder": {"memory_mb": 0}})", "f.json"); }),
           "f.json: key 'flight_recorder.memory_mb': must be between 1 and 1048576, got 0");
  CHECK_EQ(error_of([] { npuprof::config::from_json(R"({"flight_recorder": {"window_s": 604800.5}})", "f.json"); }),
           "f.json: key 'flight_recorder.window_s': must be above 0 and at most a week (604800), got 604800.500000");

  // Set from code, the same ranges hold when the session is made.
  npuprof::config code;
  code.min_duration_us = std::uint64_t{1} << 62;
  CHECK_EQ(error_of([&] { code.validate(); }),
           "defaults: key 'min_duration_us': must be between 0 and 3600000000, got 4611686018427387904");
  code.min_duration_us = 0;
  code.device_wait_ms = 4'000'000'000u;
  CHECK_EQ(error_of([&] { npuprof::session s{code}; }),
           "defaults: key 'device_wait_ms': must be between 0 and 600000, got 4000000000");
}

TEST_CASE("numeric settings at the edges of their ranges are accepted, from JSON and the environment") {
  struct edge {
    const char* key;
    const char* value;
    const char* with;  // other JSON keys the value needs, or ""
  };
  const edge edges[] = {
      {"buffer_size_kb", "1", R"("chunk_size_kb": 1,)"},
      {"buffer_size_kb", "1073741824", R"("chunk_size_kb": 4096,)"},
      {"chunk_size_kb", "1", ""},
      {"chunk_size_kb", "4096", ""},
      {"flush_interval_ms", "1", ""},
      {"flush_interval_ms", "60000", ""},
      {"device_events_per_stream", "2", ""},
      {"device_events_per_stream", "65536", ""},
      {"device_wait_ms", "0", ""},
      {"device_wait_ms", "600000", ""},
      {"rank", "-1", ""},
      {"rank", "1000000", ""},
      {"local_rank", "-1", ""},
      {"local_rank", "1000000", ""},
      {"world_size", "-1", ""},
      {"world_size", "1000000", ""},
      {"min_duration_us", "0", ""},
      {"min_duration_us", "3600000000", ""},
      {"host_sys_interval_ms", "1", ""},
      {"host_sys_interval_ms", "3600000", ""},
  };
  auto value_of = [](const npuprof::config& c, const std::string& key) -> long long {
    if (key == "buffer_size_kb") return static_cast<long long>(c.buffer_size_kb);
    if (key == "chunk_size_kb") return static_cast<long long>(c.chunk_size_kb);
    if (key == "flush_interval_ms") return c.flush_interval_ms;
    if (key == "device_events_per_stream") return c.device_events_per_stream;
    if (key == "device_wait_ms") return c.device_wait_ms;
    if (key == "rank") return c.rank;
    if (key == "local_rank") return c.local_rank;
    if (key == "world_size") return c.world_size;
    if (key == "min_duration_us") return static_cast<long long>(c.min_duration_us);
    if (key == "host_sys_interval_ms") return c.host_sys_interval_ms;
    FAIL("no setting " << key);
    return 0;
  };
  test::temp_dir dir;
  for (const edge& e : edges) {
    CAPTURE(e.key);
    CAPTURE(e.value);
    const long long expected = std::stoll(e.value);
    const std::string text = std::string("{") + e.with + "\"" + e.key + "\": " + e.value + "}";
    CHECK(value_of(npuprof::config::from_json(text, "edge.json"), e.key) == expected);
    // From the environment, on top of a file with the other keys.
    const auto file = dir.path / "edge.json";
    std::string others = e.with;
    if (!others.empty()) others.pop_back();  // the trailing comma
    std::ofstream(file) << "{" << others << "}";
    test::scoped_env config_file("NPUPROF_CONFIG", file.c_str());
    test::scoped_env v(setting(e.key).env, e.value);
    CHECK(value_of(npuprof::config::from_env(), e.key) == expected);
  }
  const auto flight = npuprof::config::from_json(R"({"flight_recorder": {"memory_mb": 1048576, "window_s": 604800}})");
  CHECK(flight.flight.memory_mb == 1048576);
  CHECK(flight.flight.window_s == 604800);
  CHECK(npuprof::config::from_json(R"({"flight_recorder": {"memory_mb": 1, "window_s": 0.001}})").flight.memory_mb ==
        1);
}

TEST_CASE("an empty output directory is an error naming the key") {
  CHECK_EQ(env_error("NPUPROF_OUTPUT_DIR", ""),
           "environment variable NPUPROF_OUTPUT_DIR: is empty; unset it, or use '.' for the current directory");
  CHECK_EQ(error_of([] { npuprof::config::from_json(R"({"output_dir": ""})", "o.json"); }),
           "o.json: key 'output_dir': is empty; use \".\" for the current directory");
  npuprof::config code;
  code.output_dir.clear();
  CHECK_EQ(error_of([&] { npuprof::session s{code}; }),
           "defaults: key 'output_dir': is empty; use \".\" for the current directory");
}

TEST_CASE("export_type takes text and db, warns about unknown types and falls back to text") {
  using list = std::vector<std::string>;
  CHECK(npuprof::config{}.export_type == list{"text"});
  CHECK(npuprof::config::from_json(R"({"export_type": ["text", "db"]})").export_type == list{"text", "db"});
  const auto odd = npuprof::config::from_json(R"({"export_type": ["db", "parquet", "db"]})", "e.json");
  CHECK(odd.export_type == list{"db"});
  REQUIRE(odd.warnings.size() == 1);
  CHECK(contains(odd.warnings[0], "e.json: export_type: unknown type \"parquet\""));
  const auto none = npuprof::config::from_json(R"({"export_type": ["csv"]})");
  CHECK(none.export_type == list{"text"});
  CHECK(none.warnings.size() == 1);
  CHECK(contains(error_of([] { npuprof::config::from_json(R"({"export_type": "db"})", "e.json"); }),
                 "e.json: key 'export_type': expected an array"));
  {
    test::scoped_env config_file("NPUPROF_CONFIG", nullptr);
    test::scoped_env v("NPUPROF_EXPORT_TYPE", "db,text");
    CHECK(npuprof::config::from_env().export_type == list{"db", "text"});
  }
  {
    test::scoped_env config_file("NPUPROF_CONFIG", nullptr);
    test::scoped_env v("NPUPROF_EXPORT_TYPE", "sqlite");
    const auto c = npuprof::config::from_env();
    CHECK(c.export_type == list{"text"});
    REQUIRE(c.warnings.size() == 1);
    CHECK(contains(c.warnings[0], "environment variable NPUPROF_EXPORT_TYPE: export_type: unknown type \"sqlite\""));
  }
}

TEST_CASE("asking for the database in a program without its header is an error at start(), and nothing is recorded") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.export_type = {"text", "db"};
  npuprof::session s{cfg};
  const std::string e = error_of([&] { s.start(); });
  CHECK(contains(e, "export_type \"db\""));
  CHECK(contains(e, "npuprof/database.hpp"));
  CHECK_FALSE(s.running());
  CHECK(test::fs::is_empty(dir.path));
}

TEST_CASE("metrics take an address, a series cap and buckets; bad values are errors naming the key") {
  CHECK_FALSE(npuprof::config{}.metrics.enabled());
  const auto c = npuprof::config::from_json(
      R"({"metrics": {"listen": "127.0.0.1:9464", "max_series": 50, "buckets": [0.001, 0.01, 1]}})");
  CHECK(c.metrics.listen == "127.0.0.1:9464");
  CHECK(c.metrics.max_series == 50);
  CHECK(c.metrics.buckets == std::vector<double>{0.001, 0.01, 1});
  CHECK(c.to_json()["metrics"]["listen"] == "127.0.0.1:9464");
  CHECK(npuprof::config::from_json(R"({"metrics": {"listen": "0.0.0.0:0"}})").metrics.listen == "0.0.0.0:0");
  CHECK(npuprof::config::from_json(R"({"metrics": {"listen": "9464"}})").metrics.listen == "9464");
  const std::pair<const char*, const char*> bad[] = {
      {R"({"metrics": "127.0.0.1:9464"})", "key 'metrics': expected an object"},
      {R"({"metrics": {"listen": "localhost"}})", "key 'metrics.listen': expected \"address:port\""},
      {R"({"metrics": {"listen": "9464x"}})", "key 'metrics.listen'"},
      {R"({"metrics": {"listen": "[::1]:9464"}})", "key 'metrics.listen': expected \"address:port\" with an IPv4"},
      {R"({"metrics": {"listen": "999.1.1.1:0"}})", "key 'metrics.listen'"},
      {R"({"metrics": {"listen": "19999,127.0.0.1:0"}})", "key 'metrics.listen'"},
      {R"({"metrics": {"listen": "+127.0.0.1:0"}})", "key 'metrics.listen'"},
      {R"({"metrics": {"listen": "localhost:9464"}})", "key 'metrics.listen'"},
      {R"({"metrics": {"buckets": [1e-10, 1]}})", "key 'metrics.buckets'"},
      {R"({"metrics": {"max_series": 100001}})", "key 'metrics.max_series'"},
      {R"({"metrics": {"listen": "127.0.0.1:65536"}})", "key 'metrics.listen'"},
      {R"({"metrics": {"listen": ":9464"}})", "key 'metrics.listen'"},
      {R"({"metrics": {"listen": "127.0.0.1:94x"}})", "key 'metrics.listen'"},
      {R"({"metrics": {"max_series": 0}})", "key 'metrics.max_series'"},
      {R"({"metrics": {"buckets": [0.1, 0.01]}})", "key 'metrics.buckets': expected increasing"},
      {R"({"metrics": {"buckets": [0, 1]}})", "key 'metrics.buckets'"},
      {R"({"metrics": {"buckets": []}})", "key 'metrics.buckets': expected 1 to 64"},
      {R"({"metrics": {"port": 9464}})", "key 'metrics.port': unknown"},
  };
  for (const auto& b : bad) {
    const std::string e = error_of([&] { npuprof::config::from_json(b.first, "m.json"); });
    CHECK_MESSAGE(contains(e, std::string("m.json: ") + b.second), std::string(b.first), " -> ", e);
  }
  {
    test::scoped_env config_file("NPUPROF_CONFIG", nullptr);
    test::scoped_env v("NPUPROF_METRICS_LISTEN", "127.0.0.1:9500");
    CHECK(npuprof::config::from_env().metrics.listen == "127.0.0.1:9500");
  }
  {
    test::scoped_env config_file("NPUPROF_CONFIG", nullptr);
    test::scoped_env v("NPUPROF_METRICS_LISTEN", "localhost:9500");
    CHECK(contains(error_of([] { npuprof::config::from_env(); }),
                   "environment variable NPUPROF_METRICS_LISTEN: expected \"address:port\""));
  }
  npuprof::config code;
  code.metrics.buckets = {1, 1};
  CHECK(contains(error_of([&] { npuprof::session s{code}; }), "defaults: key 'metrics.buckets'"));
}

TEST_CASE("asking for metrics in a program without their header is an error at start(), and nothing is recorded") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.metrics.listen = "127.0.0.1:0";
  npuprof::session s{cfg};
  const std::string e = error_of([&] { s.start(); });
  CHECK(contains(e, "metrics"));
  CHECK(contains(e, "npuprof/metrics.hpp"));
  CHECK_FALSE(s.running());
  CHECK(s.metrics_address().empty());
  CHECK(test::fs::is_empty(dir.path));
}

TEST_CASE("the config is written to the metadata") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.domain_exclude = {"debug"};
  auto t = test::record(cfg, [] {});
  CHECK(t.meta["config"]["mstx_domain_exclude"] == std::vector<std::string>{"debug"});
  CHECK(t.meta["config"]["mstx"] == true);
  CHECK(t.meta["npuprof_version"] == npuprof::version_string);
}

namespace {

// A row of the configuration table (docs/configuration.md): JSON keys, environment variables,
// the default and what it means, as written there.
struct readme_row {
  std::vector<std::string> keys, envs;
  std::string default_text, meaning;
};

std::vector<std::string> backticked(const std::string& cell) {
  std::vector<std::string> out;
  static const std::regex code("`([^`]*)`");
  for (auto it = std::sregex_iterator(cell.begin(), cell.end(), code); it != std::sregex_iterator(); ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, s.find_last_not_of(' ') - b + 1);
}

// The rows of the table under "# Configuration" in docs/configuration.md,
// in the documentation folder NPUPROF_TEST_DOCS names (the build sets it).
std::vector<readme_row> readme_configuration(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::vector<readme_row> rows;
  std::string line;
  bool in_section = false, in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) == 0) in_section = line == "# Configuration";
    if (!in_section) continue;
    if (line.rfind("| JSON key |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table || line.rfind("|---", 0) == 0) continue;
    if (line.rfind("|", 0) != 0) break;
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string cell; std::getline(ss, cell, '|');) cells.push_back(trimmed(cell));
    REQUIRE_MESSAGE(cells.size() >= 4, line);
    readme_row r{backticked(cells[0]), {}, cells[2], cells[3]};
    for (std::string env : backticked(cells[1])) r.envs.push_back(env.substr(0, env.find('=')));
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

TEST_CASE("the configuration reference's table has every key, with the code's variables, defaults and ranges") {
  const char* docs = std::getenv("NPUPROF_TEST_DOCS");
  if (docs == nullptr) {
    MESSAGE("NPUPROF_TEST_DOCS is not set: the reference is not checked");
    return;
  }
  const auto rows = readme_configuration(std::string(docs) + "/configuration.md");
  REQUIRE(rows.size() >= 15);

  std::set<std::string> documented, known;
  for (const readme_row& r : rows) documented.insert(r.keys.begin(), r.keys.end());
  for (std::string_view k : npuprof::detail::known_config_keys()) known.insert(std::string(k));
  for (const std::string& k : known) CHECK_MESSAGE(documented.count(k) == 1, "the reference does not document " << k);
  for (const std::string& k : documented)
    CHECK_MESSAGE(known.count(k) == 1, "the reference documents an unknown key " << k);

  // Each key's environment variable, as the code's key table has it, is in its row.
  for (const readme_row& r : rows) {
    for (const std::string& name : r.keys) {
      const npuprof::detail::config_key* k = npuprof::detail::find_config_key(name);
      if (k == nullptr || k->env == nullptr) continue;
      CHECK_MESSAGE(std::find(r.envs.begin(), r.envs.end(), k->env) != r.envs.end(),
                    "the reference's row for " << name << " does not name " << std::string(k->env));
    }
  }

  const nlohmann::json defaults = npuprof::config{}.to_json();
  int defaults_checked = 0;
  for (const readme_row& r : rows) {
    const std::string& key = r.keys.front();
    CAPTURE(key);
    // A numeric key: its variable and range as the code gives them.
    for (std::size_t i = 0; i < r.keys.size(); ++i) {
      bool numeric = false;
      for (const numeric_setting& s : numeric_settings) numeric = numeric || r.keys[i] == s.key;
      if (!numeric) continue;
      const numeric_setting& s = setting(r.keys[i]);
      REQUIRE(i < r.envs.size());
      CHECK(r.envs[i] == s.env);
      std::smatch m;
      const std::string range = s.range;
      REQUIRE(std::regex_match(range, m, std::regex("between (-?[0-9]+) and ([0-9]+)")));
      CHECK_MESSAGE(std::regex_search(r.meaning, std::regex(m[1].str() + "( \\([^)]*\\))? to " + m[2].str() + "\\b")),
                    "the reference gives no range '" << m[1] << " to " << m[2] << "' in: " << r.meaning);
    }
    // A switch: its variable takes the values the table names, nothing else.
    if (r.keys.size() == 1 && r.envs.size() == 1 && defaults[key].is_boolean()) {
      CHECK(contains(env_error(r.envs[0].c_str(), "maybe"), "environment variable " + r.envs[0] + ": expected 1/0"));
    }
    // A text or list: its variable sets it.
    const bool text = defaults[key].is_string() || defaults[key].is_array();
    if (r.envs.size() == 1 && text && r.default_text != "see below") {
      bool applied = false;
      for (const char* value : {"host", "cpu", "db"}) {
        test::scoped_env config_file("NPUPROF_CONFIG", nullptr);
        test::scoped_env v(r.envs[0].c_str(), value);
        nlohmann::json got;
        try {
          got = npuprof::config::from_env().to_json()[key];
        } catch (const npuprof::config_error&) {
          continue;
        }
        applied = got == value || got == nlohmann::json::array({value});
        if (applied) break;
      }
      CHECK_MESSAGE(applied, r.envs[0] << " does not set " << key);
    }
    // The default, where the table gives it as a value.
    const std::string& d = r.default_text;
    const nlohmann::json& code = defaults[key];
    if (std::regex_match(d, std::regex("-?[0-9]+"))) {
      for (const std::string& k : r.keys) {
        CHECK_MESSAGE(defaults[k] == std::stoll(d), k << ": reference " << d << ", code " << defaults[k]);
      }
    } else if (d == "true" || d == "false") {
      CHECK(code == (d == "true"));
    } else if (d.size() > 2 && d.front() == '`' && d.back() == '`') {
      const std::string inside = d.substr(1, d.size() - 2);
      CHECK(code == (inside.front() == '[' ? nlohmann::json::parse(inside) : nlohmann::json(inside)));
    } else if (d == "none") {
      CHECK((code.is_null() || code.empty()));
    } else if (d == "off") {
      CHECK((code.contains("enabled") ? code["enabled"] == false : code["listen"] == ""));  // metrics: no address
    } else {
      MESSAGE("default of " << key << " given in words: " << d);
      continue;
    }
    ++defaults_checked;
  }
  CHECK(defaults_checked >= static_cast<int>(rows.size()) - 3);
}
