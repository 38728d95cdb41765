// Configuration from JSON files and the environment: values, errors that name
// the file, key and reason, and warnings for what is ignored.
#include "support.hpp"

#include <fstream>

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
                 "key 'buffer_size_kb': expected a non-negative integer, got -5"));
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
                   "environment variable NPUPROF_BUFFER_SIZE_KB: expected a non-negative integer, got '12abc'"));
  }
  {
    test::scoped_env inc("NPUPROF_DOMAIN_INCLUDE", " kernels , comm ,");
    CHECK(npuprof::config::from_env().domain_include == std::vector<std::string>{"kernels", "comm"});
  }
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
