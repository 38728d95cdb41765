// Reading configuration values: JSON values and environment variables of each
// type, with errors that name the source, the key, the value and what the key
// accepts.
#pragma once

#include "../marker/abi.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <charconv>
#include <cctype>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "../error.hpp"
#include "../flight_recorder.hpp"
#include "../metrics_endpoint.hpp"
#include "../schedule.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A schedule as the trace's metadata and the config's JSON write it.
inline nlohmann::json schedule_json(const schedule& s) {
  return {
      {"wait", s.wait}, {"active", s.active}, {"warmup", s.warmup}, {"repeat", s.repeat}, {"skip_first", s.skip_first}};
}

inline std::string json_type_name(const nlohmann::json& v) { return std::string(v.type_name()); }

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
inline constexpr int_range rank_range{-1, 1'000'000};                  // rank, local_rank, world_size
inline constexpr int_range min_duration_us_range{0, 3'600'000'000LL};  // an hour
inline constexpr int_range host_sys_interval_ms_range{1, 3'600'000};
inline constexpr int_range memory_mb_range{1, 1'048'576};  // 1 TiB
inline constexpr double window_s_max = 7 * 24 * 3600.0;    // a week
inline constexpr int_range max_series_range{1, 100'000};   // a scrape copies and writes them all
inline constexpr std::size_t max_buckets = 64;

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
  if (!v.is_object())
    key_error(source, "flight_recorder", "expected true, false or an object, got " + json_type_name(v));
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

/// Splits "address:port", an IPv4 address (a port alone is on loopback,
/// 127.0.0.1); false when it is not one.
inline bool split_listen(std::string_view listen, std::string& host, unsigned& port) {
  const std::size_t colon = listen.rfind(':');
  if (colon == 0 || colon + 1 == listen.size()) return false;
  host = colon == std::string_view::npos ? std::string("127.0.0.1") : std::string(listen.substr(0, colon));
  const std::string_view digits = colon == std::string_view::npos ? listen : listen.substr(colon + 1);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
  if (ec != std::errc() || end != digits.data() + digits.size() || port > 65535) return false;
  in_addr address{};
  return ::inet_pton(AF_INET, host.c_str(), &address) == 1;  // four decimal bytes, nothing else
}

/// What is wrong with metrics settings: the key and why; an empty key when
/// nothing is.
struct setting_problem {
  std::string key, what;
};
inline setting_problem metrics_problem(const ::npuprof::metrics_endpoint& m) {
  std::string host;
  unsigned port = 0;
  if (m.enabled() && !split_listen(m.listen, host, port)) {
    return {"metrics.listen",
            "expected \"address:port\" with an IPv4 address, like \"127.0.0.1:9464\", or a port alone for "
            "loopback (port 0: any free port), got \"" +
                m.listen + "\""};
  }
  if (!in_range(m.max_series, max_series_range)) {
    return {"metrics.max_series", "must be " + range_text(max_series_range) + ", got " + std::to_string(m.max_series)};
  }
  if (m.buckets.empty() || m.buckets.size() > max_buckets) {
    return {"metrics.buckets",
            "expected 1 to " + std::to_string(max_buckets) + " upper bounds, got " + std::to_string(m.buckets.size())};
  }
  for (std::size_t i = 0; i < m.buckets.size(); ++i) {
    const double b = m.buckets[i];
    if (!(b >= 1e-9 && b <= window_s_max) || (i > 0 && !(b > m.buckets[i - 1]))) {
      return {"metrics.buckets", "expected increasing numbers of seconds from 1e-9 (a nanosecond) to a week, got " +
                                     nlohmann::json(m.buckets).dump()};
    }
  }
  return {};
}

/// The `metrics` object of a config file.
inline ::npuprof::metrics_endpoint json_metrics_endpoint(const std::string& source, const nlohmann::json& v) {
  ::npuprof::metrics_endpoint m;
  if (!v.is_object())
    key_error(source, "metrics", "expected an object like {\"listen\": \"127.0.0.1:9464\"}, got " + json_type_name(v));
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string key = "metrics." + it.key();
    if (it.key() == "listen") {
      if (!it->is_string())
        key_error(source, key, "expected a string like \"127.0.0.1:9464\", got " + json_type_name(*it));
      m.listen = it->get<std::string>();
    } else if (it.key() == "max_series") {
      m.max_series = json_integer<std::size_t>(source, key, *it, max_series_range);
    } else if (it.key() == "buckets") {
      if (!it->is_array()) key_error(source, key, "expected an array of seconds, got " + json_type_name(*it));
      m.buckets.clear();
      for (const nlohmann::json& b : *it) {
        if (!b.is_number()) key_error(source, key, "expected numbers of seconds, got " + json_type_name(b));
        m.buckets.push_back(b.get<double>());
      }
    } else {
      key_error(source, key, "unknown; expected listen, max_series or buckets");
    }
  }
  if (const setting_problem p = metrics_problem(m); !p.key.empty()) key_error(source, p.key, p.what);
  return m;
}
}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
