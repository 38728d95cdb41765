// Session configuration: from code, from a JSON file (NPUPROF_CONFIG) and from
// the environment, with the key names users of torch_npu's profiler know.
#pragma once

#include "detail/abi.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "detail/config_values.hpp"
#include "detail/diagnostics.hpp"
#include "error.hpp"
#include "flight_recorder.hpp"
#include "metrics_endpoint.hpp"
#include "schedule.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

/// Everything a session can be told. Defaults suit a developer's run: all
/// markers on, output in the current directory.
struct config {
  /// The `mstx` switch (alias `msprof_tx`): markers record at all.
  bool mstx = true;
  /// `mstx_domain_include`: only these domains record (wins over exclude).
  std::vector<std::string> domain_include;
  /// `mstx_domain_exclude`: these domains do not record.
  std::vector<std::string> domain_exclude;
  /// `output_dir`: where output directories are created.
  std::string output_dir = ".";
  /// `worker_name`: first part of the output directory name (default: host name).
  std::string worker_name;
  /// `buffer_size_kb`: cap on the memory of all event buffers together; events
  /// past it are dropped and counted.
  std::size_t buffer_size_kb = 256 * 1024;
  /// `chunk_size_kb`: size of one buffer chunk, the unit threads take and hand over.
  std::size_t chunk_size_kb = 16;
  /// `flush_interval_ms`: how often the session collects full chunks.
  unsigned flush_interval_ms = 10;
  /// `backend`: "auto" (the Ascend runtime when one is found, else host
  /// only), "acl" (the Ascend runtime; says so when it falls back) or "host".
  std::string backend = "auto";
  /// `acl_library`: the Ascend runtime to load (default: NPUPROF_ACL_LIBRARY,
  /// else $ASCEND_HOME_PATH/lib64/libascendcl.so, else the loader's search).
  std::string acl_library;
  /// `device_events_per_stream`: device events pooled per stream, rounded
  /// down to a power of two; a marker finding its stream's pool empty records
  /// host-only and is counted.
  std::uint32_t device_events_per_stream = 256;
  /// `device_wait_ms`: how long stop() waits for device events in flight.
  unsigned device_wait_ms = 3000;
  /// `mstx_forward`: with the acl backend, also pass markers on to the
  /// toolkit's libms_tools_ext.so when one is found (msprof keeps seeing them).
  bool mstx_forward = true;
  /// `rank`, `world_size` (environment: RANK, LOCAL_RANK, WORLD_SIZE): this
  /// process's place in a distributed job, -1 when not part of one. The rank
  /// goes into the output directory name and the metadata.
  int rank = -1;
  int local_rank = -1;
  int world_size = -1;
  /// Gives the session's trace id (e.g. the id of a request or a job);
  /// without it one is generated.
  std::function<std::string()> trace_id_callback;
  /// `schedule`: which steps record (see npuprof::schedule); without one,
  /// everything between start() and stop() records.
  std::optional<::npuprof::schedule> schedule;
  /// Called with each output directory the session writes (schedule cycles,
  /// dumps, stop), on the thread that wrote it.
  std::function<void(const std::filesystem::path&)> on_trace_ready;
  /// `flight_recorder`: always-on mode, see npuprof::flight_recorder.
  ::npuprof::flight_recorder flight;
  /// `min_duration_us`: ranges shorter than this are left out of the output
  /// (and counted), so an always-on trace keeps the slow ones.
  std::uint64_t min_duration_us = 0;
  /// `host_sys`: host counters to sample ("cpu", "mem", "disk", "network"),
  /// every `host_sys_interval_ms`, as counter tracks of the "host_sys" domain.
  std::vector<std::string> host_sys;
  unsigned host_sys_interval_ms = 100;
  /// `export_type`: what each output directory holds, "text" (trace_view.json,
  /// profiler_metadata.json, range_summary.csv) and/or "db" (an SQLite
  /// database laid out as msprof's; needs <npuprof/database.hpp>). An
  /// unknown value is warned about and left out; none left means "text".
  std::vector<std::string> export_type = {"text"};
  /// `metrics`: live Prometheus metrics while the session runs, see
  /// npuprof::metrics_endpoint; off by default.
  ::npuprof::metrics_endpoint metrics;
  /// `mstx_library`: that library (default: NPUPROF_MSTX_LIBRARY, else
  /// $ASCEND_HOME_PATH/lib64/libms_tools_ext.so, else the loader's search).
  std::string mstx_library;

  /// Where the values came from ("defaults", a file, the environment).
  std::string source = "defaults";
  /// Problems that did not stop loading (unknown keys, conflicting filters).
  std::vector<std::string> warnings;

  /// Defaults, then the file named by NPUPROF_CONFIG (if set), then the
  /// NPUPROF_* environment variables. Throws config_error.
  static config from_env();
  /// Reads a JSON config file. Throws config_error naming the file and key.
  static config from_file(const std::string& path);
  /// Reads JSON text; `source` names it in messages.
  static config from_json(std::string_view text, const std::string& source = "<json>");

  /// Applies the NPUPROF_* environment variables on top of this config.
  void apply_env();
  /// Checks value ranges; throws config_error.
  void validate() const;
  /// The config as JSON, as written to the metadata.
  nlohmann::json to_json() const;
};

namespace detail {

inline void warn(config& cfg, std::string msg) {
  say("warning: %s", msg.c_str());
  cfg.warnings.push_back(std::move(msg));
}

inline void check_filters(config& cfg) {
  if (!cfg.domain_include.empty() && !cfg.domain_exclude.empty()) {
    warn(cfg, cfg.source + ": both mstx_domain_include and mstx_domain_exclude are set; "
              "only mstx_domain_include takes effect");
  }
}

/// One configuration key: its JSON name, its environment variable, what it
/// accepts, and how it is read from JSON and the environment, checked and
/// written back. config_keys() lists them all; from_json(), apply_env(),
/// validate() and to_json() go through that list.
struct config_key {
  std::string_view name;      // JSON key
  const char* env;            // environment variable, or nullptr
  int_range range;            // integers
  std::string_view expected;  // lists: what the array holds, for errors
  std::string_view alias_of;  // another name for that key
  void (*from_json)(config&, const std::string& source, const config_key&, const nlohmann::json&);
  void (*from_env)(config&, const config_key&, const char* value);  // nullptr: no variable
  nlohmann::json (*to_json)(const config&);
  void (*check)(const config&, const config_key&);  // nullptr: anything goes
};

template <auto M>
using member_type = std::remove_reference_t<decltype(std::declval<config&>().*M)>;

template <auto M>
nlohmann::json member_json(const config& c) {
  return c.*M;
}

[[noreturn]] inline void env_error(const config_key& k, const std::string& what) {
  throw config_error(std::string("environment variable ") + k.env + ": " + what);
}

template <auto M>
void flag_from_json(config& c, const std::string& source, const config_key& k, const nlohmann::json& v) {
  if (!v.is_boolean()) key_error(source, k.name, "expected true or false, got " + json_type_name(v));
  c.*M = v.get<bool>();
}

template <auto M>
void flag_from_env(config& c, const config_key& k, const char* v) {
  if (!parse_bool_text(v, c.*M)) env_error(k, std::string("expected 1/0, true/false, on/off or yes/no, got '") + v + "'");
}

template <auto M>
void text_from_json(config& c, const std::string& source, const config_key& k, const nlohmann::json& v) {
  if (!v.is_string()) key_error(source, k.name, "expected a string, got " + json_type_name(v));
  c.*M = v.get<std::string>();
}

template <auto M>
void text_from_env(config& c, const config_key&, const char* v) {
  c.*M = v;
}

template <auto M>
void list_from_json(config& c, const std::string& source, const config_key& k, const nlohmann::json& v) {
  if (!v.is_array()) key_error(source, k.name, "expected " + std::string(k.expected) + ", got " + json_type_name(v));
  c.*M = json_string_list(source, std::string(k.name), v);
}

template <auto M>
void list_from_env(config& c, const config_key&, const char* v) {
  c.*M = split_list(v);
}

template <auto M>
void integer_from_json(config& c, const std::string& source, const config_key& k, const nlohmann::json& v) {
  c.*M = json_integer<member_type<M>>(source, std::string(k.name), v, k.range);
}

template <auto M>
void integer_from_env(config& c, const config_key& k, const char*) {
  env_integer(k.env, k.name, k.range, c.*M);
}

template <auto M>
void integer_check(const config& c, const config_key& k) {
  if (!in_range(c.*M, k.range)) {
    key_error(c.source, k.name, "must be " + range_text(k.range) + ", got " + std::to_string(c.*M));
  }
}

template <auto M>
config_key flag_key(std::string_view name, const char* env, std::string_view alias_of = {}) {
  return {name, env, {0, 1}, {}, alias_of, &flag_from_json<M>, &flag_from_env<M>, &member_json<M>, nullptr};
}

template <auto M>
config_key text_key(std::string_view name, const char* env, void (*check)(const config&, const config_key&) = nullptr) {
  return {name, env, {0, 0}, {}, {}, &text_from_json<M>, env ? &text_from_env<M> : nullptr, &member_json<M>, check};
}

template <auto M>
config_key list_key(std::string_view name, const char* env, std::string_view expected,
                    void (*check)(const config&, const config_key&) = nullptr) {
  return {name, env, {0, 0}, expected, {}, &list_from_json<M>, &list_from_env<M>, &member_json<M>, check};
}

template <auto M>
config_key integer_key(std::string_view name, const char* env, int_range range) {
  return {name, env, range, {}, {}, &integer_from_json<M>, &integer_from_env<M>, &member_json<M>, &integer_check<M>};
}

inline void check_output_dir_name(const config& c, const config_key& k) {
  if (c.output_dir.empty()) key_error(c.source, k.name, "is empty; use \".\" for the current directory");
}

inline void output_dir_from_env(config& c, const config_key& k, const char* v) {
  if (*v == '\0') env_error(k, "is empty; unset it, or use '.' for the current directory");
  c.output_dir = v;
}

inline void check_backend(const config& c, const config_key& k) {
  if (c.backend != "auto" && c.backend != "acl" && c.backend != "host") {
    key_error(c.source, k.name, "must be \"auto\", \"acl\" or \"host\", got \"" + c.backend + "\"");
  }
}

inline void check_host_sys(const config& c, const config_key& k) {
  for (const std::string& h : c.host_sys) {
    if (h != "cpu" && h != "mem" && h != "disk" && h != "network") {
      key_error(c.source, k.name, "unknown source \"" + h + "\"; expected \"cpu\", \"mem\", \"disk\" or \"network\"");
    }
  }
}

/// Leaves out, with a warning, the export types npuprof does not know, as
/// torch_npu does; none left means "text".
inline void keep_known_export_types(config& c, const std::string& source) {
  std::vector<std::string> known;
  for (const std::string& t : c.export_type) {
    if (t == "text" || t == "db") {
      if (std::find(known.begin(), known.end(), t) == known.end()) known.push_back(t);
    } else {
      warn(c, source + ": export_type: unknown type \"" + t + "\" (ignored); expected \"text\" or \"db\"");
    }
  }
  if (known.empty()) known = {"text"};
  c.export_type = std::move(known);
}

inline config_key export_type_key() {
  config_key k = list_key<&config::export_type>("export_type", "NPUPROF_EXPORT_TYPE", "an array like [\"text\", \"db\"]");
  k.from_json = [](config& c, const std::string& source, const config_key& key, const nlohmann::json& v) {
    list_from_json<&config::export_type>(c, source, key, v);
    keep_known_export_types(c, source);
  };
  k.from_env = [](config& c, const config_key& key, const char* v) {
    list_from_env<&config::export_type>(c, key, v);
    keep_known_export_types(c, std::string("environment variable ") + key.env);
  };
  return k;
}

inline config_key schedule_key() {
  return {"schedule", nullptr, {0, 0}, {}, {},
          [](config& c, const std::string& source, const config_key&, const nlohmann::json& v) {
            c.schedule = json_schedule(source, v);
          },
          nullptr,
          [](const config& c) { return c.schedule ? c.schedule->to_json() : nlohmann::json(nullptr); },
          [](const config& c, const config_key& k) {
            if (!c.schedule) return;
            if (const std::string why = c.schedule->problem(); !why.empty()) key_error(c.source, k.name, why);
            if (c.flight.enabled) key_error(c.source, k.name, "cannot be used together with flight_recorder");
          }};
}

inline config_key flight_recorder_key() {
  return {"flight_recorder", "NPUPROF_FLIGHT_RECORDER", {0, 0}, {}, {},
          [](config& c, const std::string& source, const config_key&, const nlohmann::json& v) {
            c.flight = json_flight_recorder(source, v);
          },
          [](config& c, const config_key& k, const char* v) {
            if (!parse_bool_text(v, c.flight.enabled)) {
              env_error(k, std::string("expected 1/0, true/false, on/off or yes/no, got '") + v + "'");
            }
          },
          [](const config& c) -> nlohmann::json {
            return {{"enabled", c.flight.enabled},
                    {"window_s", c.flight.window_s},
                    {"memory_mb", c.flight.memory_mb},
                    {"signal", signal_name(c.flight.signal)},
                    {"dump_at_exit", c.flight.dump_at_exit}};
          },
          [](const config& c, const config_key&) {
            const flight_recorder& f = c.flight;
            if (!(f.window_s > 0 && f.window_s <= window_s_max)) {
              key_error(c.source, "flight_recorder.window_s",
                        "must be above 0 and at most a week (604800), got " + std::to_string(f.window_s));
            }
            if (!in_range(f.memory_mb, memory_mb_range)) {
              key_error(c.source, "flight_recorder.memory_mb",
                        "must be " + range_text(memory_mb_range) + ", got " + std::to_string(f.memory_mb));
            }
            if (f.enabled && f.memory_mb * 1024 < 4 * c.chunk_size_kb) {
              key_error(c.source, "flight_recorder.memory_mb",
                        "must hold at least 4 chunks of chunk_size_kb (" + std::to_string(c.chunk_size_kb) + ")");
            }
          }};
}

inline config_key metrics_key() {
  return {"metrics", "NPUPROF_METRICS_LISTEN", {0, 0}, {}, {},
          [](config& c, const std::string& source, const config_key&, const nlohmann::json& v) {
            c.metrics = json_metrics_endpoint(source, v);
          },
          [](config& c, const config_key& k, const char* v) {
            c.metrics.listen = v;
            if (const setting_problem p = metrics_problem(c.metrics); !p.key.empty()) env_error(k, p.what);
          },
          [](const config& c) -> nlohmann::json {
            return {{"listen", c.metrics.listen}, {"max_series", c.metrics.max_series}, {"buckets", c.metrics.buckets}};
          },
          [](const config& c, const config_key&) {
            if (const setting_problem p = metrics_problem(c.metrics); !p.key.empty()) key_error(c.source, p.key, p.what);
          }};
}

/// Every key a config file may hold, in the order README's table lists them.
/// Never destroyed: a session may be written after static destructors ran.
inline const std::vector<config_key>& config_keys() {
  static const std::vector<config_key>& keys = *new std::vector<config_key>{
      flag_key<&config::mstx>("mstx", "NPUPROF_MSTX"),
      flag_key<&config::mstx>("msprof_tx", nullptr, "mstx"),
      list_key<&config::domain_include>("mstx_domain_include", "NPUPROF_DOMAIN_INCLUDE", "an array of domain names"),
      list_key<&config::domain_exclude>("mstx_domain_exclude", "NPUPROF_DOMAIN_EXCLUDE", "an array of domain names"),
      [] {
        config_key k = text_key<&config::output_dir>("output_dir", "NPUPROF_OUTPUT_DIR", &check_output_dir_name);
        k.from_env = &output_dir_from_env;
        return k;
      }(),
      text_key<&config::worker_name>("worker_name", "NPUPROF_WORKER_NAME"),
      integer_key<&config::buffer_size_kb>("buffer_size_kb", "NPUPROF_BUFFER_SIZE_KB", buffer_size_kb_range),
      integer_key<&config::chunk_size_kb>("chunk_size_kb", "NPUPROF_CHUNK_SIZE_KB", chunk_size_kb_range),
      integer_key<&config::flush_interval_ms>("flush_interval_ms", "NPUPROF_FLUSH_INTERVAL_MS",
                                              flush_interval_ms_range),
      text_key<&config::backend>("backend", "NPUPROF_BACKEND", &check_backend),
      // The runtime libraries' variables are read when they are loaded.
      text_key<&config::acl_library>("acl_library", nullptr),
      integer_key<&config::device_events_per_stream>("device_events_per_stream", "NPUPROF_DEVICE_EVENTS_PER_STREAM",
                                                     device_events_per_stream_range),
      integer_key<&config::device_wait_ms>("device_wait_ms", "NPUPROF_DEVICE_WAIT_MS", device_wait_ms_range),
      flag_key<&config::mstx_forward>("mstx_forward", "NPUPROF_MSTX_FORWARD"),
      text_key<&config::mstx_library>("mstx_library", nullptr),
      integer_key<&config::rank>("rank", "RANK", rank_range),
      integer_key<&config::local_rank>("local_rank", "LOCAL_RANK", rank_range),
      integer_key<&config::world_size>("world_size", "WORLD_SIZE", rank_range),
      schedule_key(),
      flight_recorder_key(),
      integer_key<&config::min_duration_us>("min_duration_us", "NPUPROF_MIN_DURATION_US", min_duration_us_range),
      list_key<&config::host_sys>("host_sys", "NPUPROF_HOST_SYS", "an array like [\"cpu\", \"mem\"]", &check_host_sys),
      integer_key<&config::host_sys_interval_ms>("host_sys_interval_ms", "NPUPROF_HOST_SYS_INTERVAL_MS",
                                                 host_sys_interval_ms_range),
      export_type_key(),
      metrics_key(),
  };
  return keys;
}

inline const config_key* find_config_key(std::string_view name) {
  for (const config_key& k : config_keys()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

inline std::vector<std::string_view> known_config_keys() {
  std::vector<std::string_view> names;
  for (const config_key& k : config_keys()) names.push_back(k.name);
  return names;
}

inline std::string unknown_key_warning(const std::string& source, const std::string& key) {
  std::string msg = source + ": unknown key '" + key + "' (ignored)";
  std::string_view best;
  std::size_t best_d = 3;
  for (std::string_view k : known_config_keys()) {
    const std::size_t d = edit_distance(key, k);
    if (d < best_d) best_d = d, best = k;
  }
  if (!best.empty()) msg += "; did you mean '" + std::string(best) + "'?";
  return msg;
}

}  // namespace detail

inline config config::from_json(std::string_view text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    std::string what = e.what();
    // nlohmann's own text repeats the position; keep just its reason.
    const std::size_t colon = what.rfind(": ");
    if (colon != std::string::npos) what = what.substr(colon + 2);
    throw config_error(source + ":" + detail::text_position(text, e.byte == 0 ? 0 : e.byte - 1) +
                       ": invalid JSON: " + what);
  } catch (const nlohmann::json::exception& e) {  // e.g. a number too large for a double
    std::string what = e.what();
    const std::size_t bracket = what.find("] ");
    if (bracket != std::string::npos) what = what.substr(bracket + 2);
    throw config_error(source + ": invalid JSON: " + what);
  }
  if (!doc.is_object()) {
    throw config_error(source + ": expected a JSON object at the top level, got " + detail::json_type_name(doc));
  }
  config cfg;
  cfg.source = source;
  std::map<std::string_view, nlohmann::json> given;  // by key, aliases under their key's name
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const detail::config_key* k = detail::find_config_key(it.key());
    if (k == nullptr) {
      detail::warn(cfg, detail::unknown_key_warning(source, it.key()));
      continue;
    }
    k->from_json(cfg, source, *k, it.value());
    const auto [at, first] = given.emplace(k->alias_of.empty() ? k->name : k->alias_of, it.value());
    if (!first && at->second != it.value()) {
      detail::key_error(source, it.key(), "conflicts with the value given for its alias");
    }
  }
  detail::check_filters(cfg);
  cfg.validate();
  return cfg;
}

inline config config::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error(path + ": cannot open config file: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  return from_json(text.str(), path);
}

inline void config::apply_env() {
  for (const detail::config_key& k : detail::config_keys()) {
    if (k.env == nullptr || k.from_env == nullptr) continue;
    if (const char* v = std::getenv(k.env)) k.from_env(*this, k, v);
  }
}

inline config config::from_env() {
  config cfg;
  if (const char* path = std::getenv("NPUPROF_CONFIG"); path != nullptr && *path != '\0') {
    cfg = from_file(path);
    cfg.source = std::string(path) + " + environment";
  } else {
    cfg.source = "environment";
  }
  const bool had_both = !cfg.domain_include.empty() && !cfg.domain_exclude.empty();
  cfg.apply_env();
  if (!had_both) detail::check_filters(cfg);
  cfg.validate();
  return cfg;
}

inline void config::validate() const {
  auto bad = [&](const char* key, const std::string& what) { detail::key_error(source, key, what); };
  for (const detail::config_key& k : detail::config_keys()) {
    if (k.check != nullptr) k.check(*this, k);
  }
  // What one key allows that depends on another.
  if (buffer_size_kb < chunk_size_kb) {
    bad("buffer_size_kb", "must be at least chunk_size_kb (" + std::to_string(chunk_size_kb) + "), got " +
                              std::to_string(buffer_size_kb));
  }
  if (buffer_size_kb / chunk_size_kb > 1'000'000) {
    bad("buffer_size_kb", "makes more than a million chunks; raise chunk_size_kb");
  }
  if (world_size >= 0 && rank >= world_size) {
    bad("rank", "must be below world_size (" + std::to_string(world_size) + "), got " + std::to_string(rank));
  }
}

inline nlohmann::json config::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  for (const detail::config_key& k : detail::config_keys()) {
    if (k.alias_of.empty()) out[std::string(k.name)] = k.to_json(*this);
  }
  out["source"] = source;
  return out;
}

NPUPROF_ABI_END
}  // namespace npuprof
