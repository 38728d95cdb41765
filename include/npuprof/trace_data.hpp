// A session's recorded events, decoded: what every exporter reads.
#pragma once

#include "marker/abi.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "clock.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

/// One decoded event. Times are steady_clock nanoseconds.
struct trace_event {
  enum class type : std::uint8_t { slice, instant, counter };

  type what = type::slice;
  bool incomplete = false;  // a range still open when the trace was written
  bool value_is_double = false;
  bool id_matched = false;           // begun with an id (range_start, unique_range, copied scoped range)
  bool began_before_window = false;  // a flight recorder's range whose begin was let go
  std::uint16_t domain = 0;          // index into trace_data::domains
  std::uint32_t name = 0;            // index into trace_data::strings
  std::uint32_t tid = 0;             // thread that began it
  std::uint32_t end_tid = 0;         // thread that ended it (slices)
  std::int64_t ts = 0;
  std::int64_t dur = 0;
  std::uint64_t stream = 0;  // device stream it is tied to, 0 if none
  union {
    std::int64_t i64;
    double f64;
  } value{0};
};

/// Where a stream-tied host event ran on the device: a slice between the
/// device events recorded at the range's begin and end, or an instant for a
/// mark. Times are steady_clock nanoseconds, mapped from the device clock.
struct device_event {
  std::size_t host = 0;  // index of the host event in trace_data::events
  std::uint64_t stream = 0;
  std::int64_t ts = 0;
  std::int64_t dur = 0;
  bool instant = false;
};

/// Problems met while recording and decoding. Nothing is lost silently:
/// every event that is not in the trace is counted here.
struct trace_counts {
  std::uint64_t dropped = 0;  // buffer full
  std::unordered_map<std::uint32_t, std::uint64_t> dropped_by_thread;
  std::uint64_t truncated_messages = 0;
  std::uint64_t null_messages = 0;
  std::uint64_t unmatched_range_ends = 0;  // unknown range id
  std::uint64_t repeated_range_ends = 0;   // a range ended again (the first end in time counts)
  std::uint64_t open_ranges = 0;           // still open at the end (exported as incomplete)
  std::uint64_t open_scoped_ranges = 0;    // scoped, registered message, open at the end: not in the trace
  std::uint64_t ranges_without_end = 0;    // no end, and ends were dropped: drawn with no duration
  std::uint64_t dropped_range_ends = 0;    // ends that found no room in a full buffer
  std::uint64_t began_before_window = 0;   // flight recorder: ends whose begins were let go
  std::uint64_t overlapping_ranges = 0;    // scoped ranges ended out of scope order: on another track
  std::uint64_t domains_over_limit = 0;    // domains recorded under "(domains over the limit)"
  std::uint64_t corrupt_records = 0;
  std::uint64_t rejected_domain_names = 0;   // invalid names given to mstxDomainCreateA
  std::uint64_t destroyed_domain_calls = 0;  // mstx marks and range starts on a destroyed domain
  std::uint64_t foreign_domain_handles = 0;  // mstx calls with a handle mstxDomainCreateA did not return
  std::uint64_t mstx_ranges_over_limit = 0;  // mstx ranges begun with no id free: cannot be ended
  std::uint64_t buffer_bytes = 0;            // bytes the records took in the buffers
  std::uint64_t device_unresolved = 0;       // device events whose time could not be read
  std::uint64_t device_unpaired = 0;         // stream-tied ranges with a device begin but no device end
  std::uint64_t short_ranges = 0;            // left out: shorter than min_duration_us
  std::uint64_t outside_window = 0;          // left out: ended before a dump's window
  std::uint64_t evicted_bytes = 0;           // records a flight recorder let go to stay in its memory cap
};

/// One step of the session: from a session::step() call (or the start) to
/// the next (or the end of the data); torch_npu's ProfilerStep#N.
struct step_span {
  long id = 0;                // the step's number, counted from 0 at start()
  std::int64_t start_ns = 0;  // steady_clock
  std::int64_t end_ns = 0;
};

/// A decoded trace: what session::data() returns and what the writers read.
/// Events name their strings and domains by index; times are steady_clock
/// nanoseconds, and wall_start_ns is the system clock at start_ns.
struct trace_data {
  std::vector<trace_event> events;
  std::vector<device_event> device_events;  // sorted by nothing in particular
  std::vector<std::string> strings;         // event names, deduplicated
  std::vector<std::string> domains;         // by index
  std::unordered_map<std::uint32_t, std::string> thread_names;
  std::unordered_map<std::uint64_t, std::string> stream_names;
  trace_counts counts;

  clock_calibration clock;
  std::int64_t start_ns = 0;       // steady_clock, session start
  std::int64_t end_ns = 0;         // steady_clock, when the data was taken
  std::int64_t wall_start_ns = 0;  // system_clock at start_ns
  std::uint32_t pid = 0;
  std::string process_name;
  std::string hostname;
  nlohmann::json config;
  /// The backend that ran: name, device, library, whether it is simulated,
  /// device event counts; written to the metadata.
  nlohmann::json backend = {{"name", "host"}};
  std::int32_t device_id = 0;
  bool device_simulated = false;
  /// The device's name as its runtime reports it ("" with no device).
  std::string device_name;
  /// The steps the data covers, in order, cut to it; none when the program
  /// never called session::step().
  std::vector<step_span> steps;
  std::uint64_t steps_not_kept = 0;  // ended steps the session let go (it keeps the latest 65536)
  /// How this data was collected: "session", a schedule "cycle" or a
  /// flight recorder "dump", with the details (steps, reason, window).
  nlohmann::json collection = {{"mode", "session"}};

  /// The name of `e`, and the name of its domain ("?" when unknown).
  std::string_view name_of(const trace_event& e) const { return strings[e.name]; }
  std::string_view domain_of(const trace_event& e) const {
    return e.domain < domains.size() ? std::string_view(domains[e.domain]) : std::string_view("?");
  }
};

NPUPROF_ABI_END
}  // namespace npuprof
