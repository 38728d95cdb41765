// The configuration keys: each key's name, environment variable, parser,
// check and JSON form, in one table that loading, validation, the metadata
// and README's table all read.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../config.hpp"
#include "../marker/diagnostics.hpp"
#include "../engine/config_values.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

namespace detail {

inline void warn(config& cfg, std::string msg) {
  say("warning: %s", msg.c_str());
  cfg.warnings.push_back(std::move(msg));
}

inline void check_filters(config& cfg) {
  if (!cfg.domain_include.empty() && !cfg.domain_exclude.empty()) {
    warn(cfg, cfg.source +
                  ": both mstx_domain_include and mstx_domain_exclude are set; "
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
  if (!parse_bool_text(v, c.*M))
    env_error(k, std::string("expected 1/0, true/false, on/off or yes/no, got '") + v + "'");
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
// The output formats' names (control/export_formats.hpp), through the
// implementation: this table is read without the writers.
bool is_export_type(std::string_view name) noexcept;
std::string export_type_names();

inline void keep_known_export_types(config& c, const std::string& source) {
  std::vector<std::string> known;
  for (const std::string& t : c.export_type) {
    if (is_export_type(t)) {
      if (std::find(known.begin(), known.end(), t) == known.end()) known.push_back(t);
    } else {
      warn(c, source + ": export_type: unknown type \"" + t + "\" (ignored); expected " + export_type_names());
    }
  }
  if (known.empty()) known = {"text"};
  c.export_type = std::move(known);
}

inline config_key export_type_key() {
  config_key k =
      list_key<&config::export_type>("export_type", "NPUPROF_EXPORT_TYPE", "an array like [\"text\", \"db\"]");
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
  return {"schedule",
          nullptr,
          {0, 0},
          {},
          {},
          [](config& c, const std::string& source, const config_key&, const nlohmann::json& v) {
            c.schedule = json_schedule(source, v);
          },
          nullptr,
          [](const config& c) { return c.schedule ? schedule_json(*c.schedule) : nlohmann::json(nullptr); },
          [](const config& c, const config_key& k) {
            if (!c.schedule) return;
            if (const std::string why = c.schedule->problem(); !why.empty()) key_error(c.source, k.name, why);
            if (c.flight.enabled) key_error(c.source, k.name, "cannot be used together with flight_recorder");
          }};
}

inline config_key flight_recorder_key() {
  return {"flight_recorder",
          "NPUPROF_FLIGHT_RECORDER",
          {0, 0},
          {},
          {},
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
  return {"metrics",
          "NPUPROF_METRICS_LISTEN",
          {0, 0},
          {},
          {},
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
            if (const setting_problem p = metrics_problem(c.metrics); !p.key.empty())
              key_error(c.source, p.key, p.what);
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

NPUPROF_ABI_END
}  // namespace npuprof
