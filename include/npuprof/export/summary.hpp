// range_summary.csv: per domain and range name, how often and how long, on
// the host and (for stream-tied ranges) on the device; sorted by total time.
#pragma once

#include "../detail/abi.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "../trace_data.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A CSV cell: quoted, quotes doubled, and text that a spreadsheet would run
/// as a formula (starting with =, +, -, @, tab or carriage return) prefixed
/// with a single quote.
inline std::string csv_cell(std::string_view text) {
  std::string out = "\"";
  if (!text.empty() && std::string_view("=+-@\t\r").find(text.front()) != std::string_view::npos) out += '\'';
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

/// The duration at percentile `p` (nearest rank) of `v`, which is
/// partitioned around it on return. Ranks asked for in increasing order only
/// look above the previous one: `from` is where the previous rank was.
inline std::int64_t percentile(std::vector<std::int64_t>& v, double p, std::size_t& from) {
  if (v.empty()) return 0;
  const auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size()) + 0.999999);
  const std::size_t at = std::min(v.size(), std::max<std::size_t>(rank, 1)) - 1;
  std::nth_element(v.begin() + static_cast<std::ptrdiff_t>(std::min(from, at)), v.begin() + static_cast<std::ptrdiff_t>(at),
                   v.end());
  from = at;
  return v[at];
}

inline std::string render_summary(const trace_data& d) {
  // (where: device 0, host 1; domain; name) -> durations in ns. Numbers, not
  // strings, as keys: this runs once per slice, and consecutive slices
  // mostly share a name, so the last group found is tried first.
  constexpr int device_side = 0, host_side = 1;
  using group_key = std::tuple<int, std::uint16_t, std::uint32_t>;
  std::map<group_key, std::vector<std::int64_t>> groups;
  group_key last_key{-1, 0, 0};
  std::vector<std::int64_t>* last = nullptr;
  auto add = [&](const group_key& key, std::int64_t dur) {
    if (last == nullptr || key != last_key) {
      last = &groups[key];
      last_key = key;
    }
    last->push_back(dur);
  };
  for (const trace_event& e : d.events) {
    if (e.what == trace_event::type::slice && !e.incomplete && !e.began_before_window) add({host_side, e.domain, e.name}, e.dur);
  }
  for (const device_event& e : d.device_events) {
    if (e.instant) continue;
    const trace_event& host = d.events[e.host];
    add({device_side, host.domain, host.name}, e.dur);
  }
  struct row {
    std::string line;
    std::int64_t total;
  };
  std::vector<row> rows;
  auto us = [](std::int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1000.0); };
  for (auto& [key, durs] : groups) {
    std::int64_t total = 0;
    for (std::int64_t v : durs) total += v;
    const auto [lo, hi] = std::minmax_element(durs.begin(), durs.end());
    const std::int64_t shortest = *lo, longest = *hi;
    std::size_t from = 0;
    const std::int64_t p50 = percentile(durs, 50, from);
    const std::int64_t p90 = percentile(durs, 90, from);
    const std::int64_t p99 = percentile(durs, 99, from);
    const auto& [side, domain, name] = key;
    const char* where = side == device_side ? "device" : "host";
    const std::string_view domain_name =
        domain < d.domains.size() ? std::string_view(d.domains[domain]) : std::string_view("?");
    rows.push_back({fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csv_cell(domain_name), csv_cell(d.strings[name]),
                                where, durs.size(), us(total), us(total / static_cast<std::int64_t>(durs.size())),
                                us(shortest), us(longest), us(p50), us(p90), us(p99)),
                    total});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) { return a.total > b.total; });
  std::string out = "domain,name,where,count,total_us,mean_us,min_us,max_us,p50_us,p90_us,p99_us\n";
  for (const row& r : rows) out += r.line;
  return out;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
