// Session configuration: from code, from a JSON file (NPUPROF_CONFIG) and from
// the environment, with the key names users of torch_npu's profiler know.
#pragma once

#include "detail/abi.hpp"

#include <algorithm>
#include <charconv>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "detail/diagnostics.hpp"
#include "error.hpp"
#include "schedule.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

/// `flight_recorder`: always-on mode. The session keeps only the most recent
/// window of events, within a memory cap, and writes it when asked
/// (npuprof::dump(), the signal, stop() or the end of the process).
struct flight_recorder {
  bool enabled = false;
  /// `window_s`: how far back a dump reaches.
  double window_s = 60;
  /// `memory_mb`: cap on all event memory of the session (it replaces
  /// buffer_size_kb); the window keeps at most half of it, the rest is for
  /// the chunks threads are writing and the ready reserve.
  std::size_t memory_mb = 64;
  /// `signal`: a signal that asks for a dump ("SIGUSR1", "SIGUSR2" or
  /// "none"); its handler only sets a flag, the dump runs on npuprof's thread.
  int signal = SIGUSR1;
  /// `dump_at_exit`: a session still running at exit writes its window.
  bool dump_at_exit = true;
};

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

inline std::string json_type_name(const nlohmann::json& v) {
  return std::string(v.type_name());
}

[[noreturn]] inline void key_error(const std::string& source, std::string_view key, const std::string& what) {
  throw config_error(source + ": key '" + std::string(key) + "': " + what);
}

inline std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  while (!s.empty()) {
    const std::size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
    while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
    if (!item.empty()) out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

inline const std::vector<std::string_view>& known_config_keys() {
  static const std::vector<std::string_view> keys = {
      "mstx", "msprof_tx", "mstx_domain_include", "mstx_domain_exclude", "output_dir",
      "worker_name", "buffer_size_kb", "chunk_size_kb", "flush_interval_ms", "backend", "acl_library",
      "device_events_per_stream", "device_wait_ms", "mstx_forward", "mstx_library", "rank", "local_rank",
      "world_size", "schedule", "flight_recorder", "min_duration_us",
      "host_sys", "host_sys_interval_ms"};
  return keys;
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

/// "file:line:column" of a byte offset in `text` (both 1-based).
inline std::string text_position(std::string_view text, std::size_t byte) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return std::to_string(line) + ":" + std::to_string(column);
}

inline bool parse_bool_text(std::string_view s, bool& out) {
  std::string v(s);
  for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (v == "1" || v == "true" || v == "on" || v == "yes") return out = true, true;
  if (v == "0" || v == "false" || v == "off" || v == "no") return out = false, true;
  return false;
}

inline std::vector<std::string> json_string_list(const std::string& source, const std::string& key,
                                                 const nlohmann::json& v) {
  if (!v.is_array()) key_error(source, key, "expected an array of domain names, got " + json_type_name(v));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      key_error(source, key, "element " + std::to_string(i) + ": expected a string, got " + json_type_name(v[i]));
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

/// The values a numeric setting accepts, both ends included.
struct int_range {
  long long lo, hi;
};

inline constexpr int_range buffer_size_kb_range{1, 1LL << 30};  // up to 1 TiB
inline constexpr int_range chunk_size_kb_range{1, 4096};
inline constexpr int_range flush_interval_ms_range{1, 60'000};
inline constexpr int_range device_events_per_stream_range{2, 65'536};
inline constexpr int_range device_wait_ms_range{0, 600'000};
inline constexpr int_range rank_range{-1, 1'000'000};  // rank, local_rank, world_size
inline constexpr int_range min_duration_us_range{0, 3'600'000'000LL};  // an hour
inline constexpr int_range host_sys_interval_ms_range{1, 3'600'000};
inline constexpr int_range memory_mb_range{1, 1'048'576};  // 1 TiB
inline constexpr double window_s_max = 7 * 24 * 3600.0;     // a week

inline std::string range_text(int_range r) {
  return "between " + std::to_string(r.lo) + " and " + std::to_string(r.hi);
}

template <class T>
inline bool in_range(T v, int_range r) {
  if constexpr (std::is_signed_v<T>) {
    return static_cast<long long>(v) >= r.lo && static_cast<long long>(v) <= r.hi;
  } else {
    return static_cast<unsigned long long>(v) <= static_cast<unsigned long long>(r.hi) &&
           (r.lo <= 0 || static_cast<unsigned long long>(v) >= static_cast<unsigned long long>(r.lo));
  }
}

/// An integer in `r` from JSON; anything else is an error naming the key,
/// the value and the range.
template <class T>
inline T json_integer(const std::string& source, const std::string& key, const nlohmann::json& v, int_range r) {
  if (!v.is_number_integer()) {
    key_error(source, key,
              "expected an integer " + range_text(r) + ", got " + (v.is_number() ? v.dump() : json_type_name(v)));
  }
  const bool ok = v.is_number_unsigned() ? in_range(v.get<std::uint64_t>(), r) : in_range(v.get<std::int64_t>(), r);
  if (!ok) key_error(source, key, "must be " + range_text(r) + ", got " + v.dump());
  return static_cast<T>(v.get<std::int64_t>());
}

/// An integer in `r` from the environment variable `name` (setting `key`),
/// when set; anything else is an error naming both, the value and the range.
template <class T>
inline void env_integer(const char* name, std::string_view key, int_range r, T& out) {
  const char* v = std::getenv(name);
  if (v == nullptr) return;
  const std::string_view text(v);
  long long n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  const std::string where = std::string("environment variable ") + name + " (" + std::string(key) + "): ";
  if (text.empty() || end != text.data() + text.size() || (ec != std::errc() && ec != std::errc::result_out_of_range)) {
    throw config_error(where + "expected an integer " + range_text(r) + ", got '" + std::string(text) + "'");
  }
  if (ec == std::errc::result_out_of_range || n < r.lo || n > r.hi) {
    throw config_error(where + "must be " + range_text(r) + ", got '" + std::string(text) + "'");
  }
  out = static_cast<T>(n);
}

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

inline ::npuprof::schedule json_schedule(const std::string& source, const nlohmann::json& v) {
  if (!v.is_object()) {
    key_error(source, "schedule", "expected an object like {\"wait\": 1, \"active\": 2}, got " + json_type_name(v));
  }
  ::npuprof::schedule s;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string key = "schedule." + it.key();
    long* field = it.key() == "wait"         ? &s.wait
                  : it.key() == "active"     ? &s.active
                  : it.key() == "warmup"     ? &s.warmup
                  : it.key() == "repeat"     ? &s.repeat
                  : it.key() == "skip_first" ? &s.skip_first
                                             : nullptr;
    if (field == nullptr) key_error(source, key, "unknown; expected wait, active, warmup, repeat or skip_first");
    if (!it->is_number_integer() || it->get<long long>() > 1'000'000'000 || it->get<long long>() < -1'000'000'000) {
      key_error(source, key, "expected an integer, got " + (it->is_number() ? it->dump() : json_type_name(*it)));
    }
    *field = static_cast<long>(it->get<long long>());
  }
  if (const std::string why = s.problem(); !why.empty()) key_error(source, "schedule", why);
  return s;
}

/// A signal by name ("SIGUSR1", "USR2", "none") or number.
inline bool parse_signal(const std::string& text, int& out) {
  std::string name = text;
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  if (name == "USR1") return out = SIGUSR1, true;
  if (name == "USR2") return out = SIGUSR2, true;
  if (text == "none" || text == "0") return out = 0, true;
  return false;
}

inline std::string signal_name(int sig) {
  if (sig == 0) return "none";
  if (sig == SIGUSR1) return "SIGUSR1";
  if (sig == SIGUSR2) return "SIGUSR2";
  return std::to_string(sig);
}

inline ::npuprof::flight_recorder json_flight_recorder(const std::string& source, const nlohmann::json& v) {
  ::npuprof::flight_recorder f;
  if (v.is_boolean()) {
    f.enabled = v.get<bool>();
    return f;
  }
  if (!v.is_object()) key_error(source, "flight_recorder", "expected true, false or an object, got " + json_type_name(v));
  f.enabled = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string key = "flight_recorder." + it.key();
    if (it.key() == "enabled" || it.key() == "dump_at_exit") {
      if (!it->is_boolean()) key_error(source, key, "expected true or false, got " + json_type_name(*it));
      (it.key() == "enabled" ? f.enabled : f.dump_at_exit) = it->get<bool>();
    } else if (it.key() == "window_s") {
      if (!it->is_number()) key_error(source, key, "expected a number of seconds, got " + json_type_name(*it));
      f.window_s = it->get<double>();
      if (!(f.window_s > 0 && f.window_s <= window_s_max)) {
        key_error(source, key, "must be above 0 and at most a week (604800), got " + std::to_string(f.window_s));
      }
    } else if (it.key() == "memory_mb") {
      f.memory_mb = json_integer<std::size_t>(source, key, *it, memory_mb_range);
    } else if (it.key() == "signal") {
      if (!it->is_string() || !parse_signal(it->get<std::string>(), f.signal)) {
        key_error(source, key, "expected \"SIGUSR1\", \"SIGUSR2\" or \"none\", got " + it->dump());
      }
    } else {
      key_error(source, key, "unknown; expected enabled, window_s, memory_mb, signal or dump_at_exit");
    }
  }
  return f;
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
  bool have_mstx = false;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "mstx" || key == "msprof_tx") {
      if (!v.is_boolean()) detail::key_error(source, key, "expected true or false, got " + detail::json_type_name(v));
      if (have_mstx && cfg.mstx != v.get<bool>()) {
        detail::key_error(source, key, "conflicts with the value given for its alias");
      }
      cfg.mstx = v.get<bool>();
      have_mstx = true;
    } else if (key == "mstx_domain_include") {
      cfg.domain_include = detail::json_string_list(source, key, v);
    } else if (key == "mstx_domain_exclude") {
      cfg.domain_exclude = detail::json_string_list(source, key, v);
    } else if (key == "output_dir" || key == "worker_name" || key == "backend" || key == "acl_library" ||
               key == "mstx_library") {
      if (!v.is_string()) detail::key_error(source, key, "expected a string, got " + detail::json_type_name(v));
      (key == "output_dir"    ? cfg.output_dir
       : key == "worker_name" ? cfg.worker_name
       : key == "backend"     ? cfg.backend
       : key == "acl_library" ? cfg.acl_library
                              : cfg.mstx_library) = v.get<std::string>();
    } else if (key == "mstx_forward") {
      if (!v.is_boolean()) detail::key_error(source, key, "expected true or false, got " + detail::json_type_name(v));
      cfg.mstx_forward = v.get<bool>();
    } else if (key == "device_events_per_stream") {
      cfg.device_events_per_stream =
          detail::json_integer<std::uint32_t>(source, key, v, detail::device_events_per_stream_range);
    } else if (key == "rank" || key == "local_rank" || key == "world_size") {
      (key == "rank" ? cfg.rank : key == "local_rank" ? cfg.local_rank : cfg.world_size) =
          detail::json_integer<int>(source, key, v, detail::rank_range);
    } else if (key == "schedule") {
      cfg.schedule = detail::json_schedule(source, v);
    } else if (key == "flight_recorder") {
      cfg.flight = detail::json_flight_recorder(source, v);
    } else if (key == "host_sys") {
      if (!v.is_array()) detail::key_error(source, key, "expected an array like [\"cpu\", \"mem\"], got " + detail::json_type_name(v));
      cfg.host_sys.clear();
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (!v[i].is_string()) {
          detail::key_error(source, key, "element " + std::to_string(i) + ": expected a string, got " + detail::json_type_name(v[i]));
        }
        cfg.host_sys.push_back(v[i].get<std::string>());
      }
    } else if (key == "host_sys_interval_ms") {
      cfg.host_sys_interval_ms = detail::json_integer<unsigned>(source, key, v, detail::host_sys_interval_ms_range);
    } else if (key == "min_duration_us") {
      cfg.min_duration_us = detail::json_integer<std::uint64_t>(source, key, v, detail::min_duration_us_range);
    } else if (key == "device_wait_ms") {
      cfg.device_wait_ms = detail::json_integer<unsigned>(source, key, v, detail::device_wait_ms_range);
    } else if (key == "buffer_size_kb") {
      cfg.buffer_size_kb = detail::json_integer<std::size_t>(source, key, v, detail::buffer_size_kb_range);
    } else if (key == "chunk_size_kb") {
      cfg.chunk_size_kb = detail::json_integer<std::size_t>(source, key, v, detail::chunk_size_kb_range);
    } else if (key == "flush_interval_ms") {
      cfg.flush_interval_ms = detail::json_integer<unsigned>(source, key, v, detail::flush_interval_ms_range);
    } else {
      detail::warn(cfg, detail::unknown_key_warning(source, key));
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
  auto env = [](const char* name) -> const char* { return std::getenv(name); };
  auto env_error = [](const char* name, const std::string& what) {
    throw config_error(std::string("environment variable ") + name + ": " + what);
  };
  if (const char* v = env("NPUPROF_MSTX")) {
    if (!detail::parse_bool_text(v, mstx)) {
      env_error("NPUPROF_MSTX", std::string("expected 1/0, true/false, on/off or yes/no, got '") + v + "'");
    }
  }
  if (const char* v = env("NPUPROF_DOMAIN_INCLUDE")) domain_include = detail::split_list(v);
  if (const char* v = env("NPUPROF_DOMAIN_EXCLUDE")) domain_exclude = detail::split_list(v);
  if (const char* v = env("NPUPROF_OUTPUT_DIR")) {
    if (*v == '\0') env_error("NPUPROF_OUTPUT_DIR", "is empty; unset it, or use '.' for the current directory");
    output_dir = v;
  }
  if (const char* v = env("NPUPROF_WORKER_NAME")) worker_name = v;
  if (const char* v = env("NPUPROF_BACKEND")) backend = v;
  if (const char* v = env("NPUPROF_MSTX_FORWARD")) {
    if (!detail::parse_bool_text(v, mstx_forward)) {
      env_error("NPUPROF_MSTX_FORWARD", std::string("expected 1/0, true/false, on/off or yes/no, got '") + v + "'");
    }
  }
  detail::env_integer("NPUPROF_BUFFER_SIZE_KB", "buffer_size_kb", detail::buffer_size_kb_range, buffer_size_kb);
  detail::env_integer("NPUPROF_CHUNK_SIZE_KB", "chunk_size_kb", detail::chunk_size_kb_range, chunk_size_kb);
  detail::env_integer("NPUPROF_FLUSH_INTERVAL_MS", "flush_interval_ms", detail::flush_interval_ms_range,
                      flush_interval_ms);
  detail::env_integer("RANK", "rank", detail::rank_range, rank);
  detail::env_integer("LOCAL_RANK", "local_rank", detail::rank_range, local_rank);
  detail::env_integer("WORLD_SIZE", "world_size", detail::rank_range, world_size);
  detail::env_integer("NPUPROF_DEVICE_EVENTS_PER_STREAM", "device_events_per_stream",
                      detail::device_events_per_stream_range, device_events_per_stream);
  if (const char* v = env("NPUPROF_FLIGHT_RECORDER")) {
    if (!detail::parse_bool_text(v, flight.enabled)) {
      env_error("NPUPROF_FLIGHT_RECORDER", std::string("expected 1/0, true/false, on/off or yes/no, got '") + v + "'");
    }
  }
  if (const char* v = env("NPUPROF_HOST_SYS")) host_sys = detail::split_list(v);
  detail::env_integer("NPUPROF_HOST_SYS_INTERVAL_MS", "host_sys_interval_ms", detail::host_sys_interval_ms_range,
                      host_sys_interval_ms);
  detail::env_integer("NPUPROF_MIN_DURATION_US", "min_duration_us", detail::min_duration_us_range, min_duration_us);
  detail::env_integer("NPUPROF_DEVICE_WAIT_MS", "device_wait_ms", detail::device_wait_ms_range, device_wait_ms);
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
  auto check = [&](const char* key, auto value, detail::int_range r) {
    if (!detail::in_range(value, r)) bad(key, "must be " + detail::range_text(r) + ", got " + std::to_string(value));
  };
  if (output_dir.empty()) bad("output_dir", "is empty; use \".\" for the current directory");
  check("chunk_size_kb", chunk_size_kb, detail::chunk_size_kb_range);
  check("buffer_size_kb", buffer_size_kb, detail::buffer_size_kb_range);
  if (buffer_size_kb < chunk_size_kb) {
    bad("buffer_size_kb", "must be at least chunk_size_kb (" + std::to_string(chunk_size_kb) + "), got " +
                              std::to_string(buffer_size_kb));
  }
  if (buffer_size_kb / chunk_size_kb > 1'000'000) {
    bad("buffer_size_kb", "makes more than a million chunks; raise chunk_size_kb");
  }
  check("flush_interval_ms", flush_interval_ms, detail::flush_interval_ms_range);
  if (backend != "auto" && backend != "acl" && backend != "host") {
    bad("backend", "must be \"auto\", \"acl\" or \"host\", got \"" + backend + "\"");
  }
  check("device_events_per_stream", device_events_per_stream, detail::device_events_per_stream_range);
  check("device_wait_ms", device_wait_ms, detail::device_wait_ms_range);
  check("rank", rank, detail::rank_range);
  check("local_rank", local_rank, detail::rank_range);
  check("world_size", world_size, detail::rank_range);
  if (world_size >= 0 && rank >= world_size) {
    bad("rank", "must be below world_size (" + std::to_string(world_size) + "), got " + std::to_string(rank));
  }
  for (const std::string& h : host_sys) {
    if (h != "cpu" && h != "mem" && h != "disk" && h != "network") {
      bad("host_sys", "unknown source \"" + h + "\"; expected \"cpu\", \"mem\", \"disk\" or \"network\"");
    }
  }
  check("host_sys_interval_ms", host_sys_interval_ms, detail::host_sys_interval_ms_range);
  check("min_duration_us", min_duration_us, detail::min_duration_us_range);
  if (schedule) {
    if (const std::string why = schedule->problem(); !why.empty()) bad("schedule", why);
    if (flight.enabled) bad("schedule", "cannot be used together with flight_recorder");
  }
  if (!(flight.window_s > 0 && flight.window_s <= detail::window_s_max)) {
    bad("flight_recorder.window_s", "must be above 0 and at most a week (604800), got " + std::to_string(flight.window_s));
  }
  check("flight_recorder.memory_mb", flight.memory_mb, detail::memory_mb_range);
  if (flight.enabled && flight.memory_mb * 1024 < 4 * chunk_size_kb) {
    bad("flight_recorder.memory_mb", "must hold at least 4 chunks of chunk_size_kb (" + std::to_string(chunk_size_kb) + ")");
  }
}

inline nlohmann::json config::to_json() const {
  return {{"mstx", mstx},
          {"mstx_domain_include", domain_include},
          {"mstx_domain_exclude", domain_exclude},
          {"output_dir", output_dir},
          {"worker_name", worker_name},
          {"buffer_size_kb", buffer_size_kb},
          {"chunk_size_kb", chunk_size_kb},
          {"flush_interval_ms", flush_interval_ms},
          {"backend", backend},
          {"acl_library", acl_library},
          {"device_events_per_stream", device_events_per_stream},
          {"device_wait_ms", device_wait_ms},
          {"mstx_forward", mstx_forward},
          {"mstx_library", mstx_library},
          {"rank", rank},
          {"local_rank", local_rank},
          {"world_size", world_size},
          {"schedule", schedule ? schedule->to_json() : nlohmann::json(nullptr)},
          {"flight_recorder",
           {{"enabled", flight.enabled},
            {"window_s", flight.window_s},
            {"memory_mb", flight.memory_mb},
            {"signal", detail::signal_name(flight.signal)},
            {"dump_at_exit", flight.dump_at_exit}}},
          {"min_duration_us", min_duration_us},
          {"host_sys", host_sys},
          {"host_sys_interval_ms", host_sys_interval_ms},
          {"source", source}};
}

NPUPROF_ABI_END
}  // namespace npuprof
