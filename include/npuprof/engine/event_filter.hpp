// Leaving events out of decoded data after the fact: the flight recorder's
// window and the min_duration_us threshold.
#pragma once

#include "../marker/abi.hpp"

#include <cstdint>
#include <vector>

#include "../trace_data.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Keeps the events for which keep(event) is true, in order, and the device
/// events of the host events kept. Returns how many events were left out.
template <class Keep>
std::size_t keep_events(trace_data& d, Keep keep) {
  constexpr std::size_t gone = static_cast<std::size_t>(-1);
  std::vector<std::size_t> new_index(d.events.size(), gone);
  std::size_t n = 0;
  for (std::size_t i = 0; i < d.events.size(); ++i) {
    if (!keep(d.events[i])) continue;
    new_index[i] = n;
    d.events[n++] = d.events[i];
  }
  const std::size_t removed = d.events.size() - n;
  d.events.resize(n);
  std::size_t m = 0;
  for (device_event& e : d.device_events) {
    if (new_index[e.host] == gone) continue;
    e.host = new_index[e.host];
    d.device_events[m++] = e;
  }
  d.device_events.resize(m);
  return removed;
}

/// Leaves out what ended before `from_ns`: a dump shows its window only.
inline std::size_t keep_window(trace_data& d, std::int64_t from_ns) {
  return keep_events(d, [&](const trace_event& e) {
    return e.what == trace_event::type::slice ? e.ts + e.dur >= from_ns : e.ts >= from_ns;
  });
}

/// Leaves out finished ranges shorter than `min_ns`. A range that began
/// before a flight recorder's window stays: its duration is unknown (and at
/// least what is drawn), and it is counted as such already.
inline std::size_t keep_long_ranges(trace_data& d, std::int64_t min_ns) {
  if (min_ns <= 0) return 0;
  return keep_events(d, [&](const trace_event& e) {
    return e.what != trace_event::type::slice || e.incomplete || e.began_before_window || e.dur >= min_ns;
  });
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
