// The files of one trace, written from collected records: trace_view.json,
// profiler_metadata.json and range_summary.csv. Records are decoded thread
// by thread, a window at a time, straight into the files: memory grows with
// a window, the ranges begun with an id and the durations the summary needs,
// not with the whole trace.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "../engine/collected.hpp"
#include "file.hpp"
#include "metadata.hpp"
#include "output_dir.hpp"
#include "summary.hpp"
#include "trace_view.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Events decoded at a time on threads whose slices nest by construction.
inline constexpr std::size_t export_window_events = std::size_t{1} << 14;

/// The track of the steps in trace_view.json, beside the threads' tracks.
inline constexpr std::uint32_t steps_track = lane_tid_base - 1;

/// The steps of `d` as slices named as torch_npu names them,
/// "ProfilerStep#N", in the domain "steps"; their names are added to `d`.
inline std::vector<trace_event> step_slices(trace_data& d) {
  std::vector<trace_event> out;
  if (d.steps.empty()) return out;
  const auto found = std::find(d.domains.begin(), d.domains.end(), "steps");
  const auto domain = static_cast<std::size_t>(found - d.domains.begin());
  if (found == d.domains.end()) d.domains.emplace_back("steps");
  d.thread_names[steps_track] = "Steps";
  for (const step_span& s : d.steps) {
    trace_event e;
    e.domain = static_cast<std::uint16_t>(domain);  // below max_domains
    e.name = static_cast<std::uint32_t>(d.strings.size());
    d.strings.push_back("ProfilerStep#" + std::to_string(s.id));
    e.tid = e.end_tid = steps_track;
    e.ts = s.start_ns;
    e.dur = s.end_ns - s.start_ns;
    out.push_back(e);
  }
  return out;
}

inline void write_trace_files(const collected& c, output_directory& dir, const std::string& trace_id,
                              const nlohmann::json& user) {
  trace_data d = c.header;  // gains strings and counts while decoding
  d.events.reserve(export_window_events);
  summary_builder summary;
  std::size_t events = 0, device_events = 0;
  file_writer file(dir, "trace_view.json");
  trace_view_writer view(d, [&](std::string_view piece) { file.write(piece); });
  decode_by_thread(c, d, export_window_events, [&](std::uint32_t tid, bool whole) {
    events += d.events.size();
    device_events += d.device_events.size();
    summary.add(d.events, d.device_events);
    view.add(d.events, d.device_events, tid, whole);
    d.events.clear();
    d.device_events.clear();
  });
  view.add(step_slices(d), {}, steps_track, true);
  view.finish();
  file.close();
  d.counts.overlapping_ranges = view.overlapping_ranges();
  write_file(dir, "profiler_metadata.json",
             render_metadata(d, events, device_events, trace_id, user)
                     .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                 "\n");
  write_file(dir, "range_summary.csv", summary.render(d));
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
