// range_summary.csv: per domain and range name, how often and how long, on
// the host and (for stream-tied ranges) on the device; sorted by total time.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "../trace_data.hpp"

namespace npuprof::detail {

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

/// The duration at percentile `p` (nearest rank) of sorted `v`.
inline std::int64_t percentile(const std::vector<std::int64_t>& v, double p) {
  if (v.empty()) return 0;
  const auto rank = static_cast<std::size_t>(p / 100.0 * static_cast<double>(v.size()) + 0.999999);
  return v[std::min(v.size(), std::max<std::size_t>(rank, 1)) - 1];
}

inline std::string render_summary(const trace_data& d) {
  // (where: device 0, host 1; domain; name) -> durations in ns. Numbers, not
  // strings, as keys: this runs once per slice.
  constexpr int device_side = 0, host_side = 1;
  std::map<std::tuple<int, std::uint16_t, std::uint32_t>, std::vector<std::int64_t>> groups;
  for (const trace_event& e : d.events) {
    if (e.what == trace_event::type::slice && !e.incomplete) groups[{host_side, e.domain, e.name}].push_back(e.dur);
  }
  for (const device_event& e : d.device_events) {
    if (e.instant) continue;
    const trace_event& host = d.events[e.host];
    groups[{device_side, host.domain, host.name}].push_back(e.dur);
  }
  struct row {
    std::string line;
    std::int64_t total;
  };
  std::vector<row> rows;
  auto us = [](std::int64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1000.0); };
  for (auto& [key, durs] : groups) {
    std::sort(durs.begin(), durs.end());
    std::int64_t total = 0;
    for (std::int64_t v : durs) total += v;
    const auto& [side, domain, name] = key;
    const char* where = side == device_side ? "device" : "host";
    const std::string_view domain_name =
        domain < d.domains.size() ? std::string_view(d.domains[domain]) : std::string_view("?");
    rows.push_back({fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", csv_cell(domain_name), csv_cell(d.strings[name]),
                                where, durs.size(), us(total), us(total / static_cast<std::int64_t>(durs.size())),
                                us(durs.front()), us(durs.back()), us(percentile(durs, 50)),
                                us(percentile(durs, 90)), us(percentile(durs, 99))),
                    total});
  }
  std::stable_sort(rows.begin(), rows.end(), [](const row& a, const row& b) { return a.total > b.total; });
  std::string out = "domain,name,where,count,total_us,mean_us,min_us,max_us,p50_us,p90_us,p99_us\n";
  for (const row& r : rows) out += r.line;
  return out;
}

}  // namespace npuprof::detail
