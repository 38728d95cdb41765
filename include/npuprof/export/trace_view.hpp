// trace_view.json: the Trace Event Format timeline that Perfetto UI,
// chrome://tracing and MindStudio Insight open.
//
// Slices on one thread track always nest strictly. Scoped ranges nest by
// construction; a range begun with an id that does not nest with its thread's
// other slices (it ended on another thread, or overlaps them) is placed on a
// "cross-thread ranges" track of its own instead.
#pragma once

#include "../detail/abi.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "../trace_data.hpp"
#include "../detail/huge_pages.hpp"
#include "file.hpp"
#include "json_escape.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// First tid of the synthetic tracks that hold cross-thread ranges; above any
/// Linux thread id.
inline constexpr std::uint32_t lane_tid_base = 0x40000000;

/// The device's process track: this plus the device id, above any Linux pid.
inline constexpr std::uint32_t device_pid_base = 0x40000000;

/// Device slices of one stream that overlap without nesting (ranges ended
/// from several threads), or begin in the same microsecond as another, go to
/// extra tracks: stream track + this × n.
inline constexpr std::uint32_t device_overlap_tid_step = 0x10000;

inline void append_us(fmt::memory_buffer& out, std::int64_t ns) {
  if (ns < 0) ns = 0;
  const fmt::format_int us(ns / 1000);
  out.append(us.data(), us.data() + us.size());
  const auto frac = static_cast<int>(ns % 1000);
  const char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10)};
  out.append(digits, digits + 4);
}

/// `units` / 10^decimals as a decimal number ("12.3456").
inline std::size_t format_fixed(char (&buf)[40], std::uint64_t units, int decimals) {
  const fmt::format_int digits(units);
  const auto n = static_cast<int>(digits.size());
  const int whole = n > decimals ? n - decimals : 0;  // digits before the point
  char* p = buf;
  if (whole == 0) *p++ = '0';
  std::memcpy(p, digits.data(), static_cast<std::size_t>(whole));
  p += whole;
  *p++ = '.';
  for (int z = n; z < decimals; ++z) *p++ = '0';  // leading zeros of the fraction
  std::memcpy(p, digits.data() + whole, static_cast<std::size_t>(n - whole));
  p += n - whole;
  return static_cast<std::size_t>(p - buf);
}

/// Writes the `dur` of a slice at `ts_ns` lasting `dur_ns` so that a reader
/// adding ts and dur as float64 (every JSON viewer does) lands exactly on
/// the double the slice's end time reads as. Otherwise, at absolute
/// timestamps (~1e10 us), a quarter of the sums come out an ulp off, and a
/// viewer sees back-to-back slices overlap and nested ones outlast their
/// parent. Three decimals when they land (most slices), else the fewest
/// more decimals that do.
inline std::size_t format_duration(char (&buf)[40], std::int64_t ts_ns, std::int64_t dur_ns) {
  if (ts_ns < 0) ts_ns = 0;
  if (dur_ns < 0) dur_ns = 0;
  // A decimal "u.ddd" reads as units / 10^k correctly rounded, which is what
  // dividing the integer units by 10^k in double gives while units < 2^53:
  // candidates are tried without formatting or parsing them.
  const double ts = static_cast<double>(ts_ns) / 1000.0;  // as "ts" reads
  const double end = static_cast<double>(ts_ns + dur_ns) / 1000.0;
  if (ts + static_cast<double>(dur_ns) / 1000.0 == end) return format_fixed(buf, static_cast<std::uint64_t>(dur_ns), 3);
  const double want = end - ts;  // exact: the two are within a factor of two
  double scale = 1000.0;
  for (int decimals = 4; decimals <= 12; ++decimals) {
    scale *= 10.0;
    const double units = std::nearbyint(want * scale);
    if (units >= 9007199254740992.0) break;  // 2^53: no longer exact
    if (ts + units / scale == end) return format_fixed(buf, static_cast<std::uint64_t>(units), decimals);
  }
  return fmt::format_to_n(buf, sizeof buf, "{}", want).size;  // shortest form that reads back as `want`
}

inline void append_duration(fmt::memory_buffer& out, std::int64_t ts_ns, std::int64_t dur_ns) {
  char buf[40];
  out.append(buf, buf + format_duration(buf, ts_ns, dur_ns));
}

inline void append_int(fmt::memory_buffer& out, std::uint64_t v) {
  const fmt::format_int s(v);
  out.append(s.data(), s.data() + s.size());
}

/// Writes into a memory buffer through a plain pointer, after reserving the
/// most it may write: one capacity check per event instead of one per piece
/// (most of the export's time went into those checks).
class raw_writer {
 public:
  raw_writer(fmt::memory_buffer& out, std::size_t most) : out_(out) {
    out.try_reserve(out.size() + most);
    p_ = out.data() + out.size();
  }
  template <std::size_t N>
  void literal(const char (&s)[N]) noexcept {  // copied with a size known at compile time
    std::memcpy(p_, s, N - 1);
    p_ += N - 1;
  }
  void put(std::string_view s) noexcept {
    std::memcpy(p_, s.data(), s.size());
    p_ += s.size();
  }
  void integer(std::uint64_t v) noexcept { put_digits(fmt::format_int(v)); }
  /// Nanoseconds as microseconds with three decimals (negative: 0).
  void microseconds(std::int64_t ns) noexcept {
    if (ns < 0) ns = 0;
    put_digits(fmt::format_int(ns / 1000));
    const auto frac = static_cast<int>(ns % 1000);
    p_[0] = '.';
    p_[1] = static_cast<char>('0' + frac / 100);
    p_[2] = static_cast<char>('0' + frac / 10 % 10);
    p_[3] = static_cast<char>('0' + frac % 10);
    p_ += 4;
  }
  /// A slice's duration, as append_duration() writes it.
  void duration(std::int64_t ts_ns, std::int64_t dur_ns) noexcept {
    char buf[40];
    put(std::string_view(buf, format_duration(buf, ts_ns, dur_ns)));
  }
  /// Ends the raw writing: the buffer's size covers what was written.
  void done() noexcept { out_.try_resize(static_cast<std::size_t>(p_ - out_.data())); }

 private:
  void put_digits(const fmt::format_int& d) noexcept { put(std::string_view(d.data(), d.size())); }

  fmt::memory_buffer& out_;
  char* p_;
};

class trace_view_writer {
 public:
  explicit trace_view_writer(const trace_data& data) : data_(data) {
    reserve_huge(track_, data.events.size());
    track_.resize(data.events.size());
  }

  /// Writes the document in pieces of about `chunk` bytes to `sink`.
  template <class Sink>
  void write(Sink&& sink, std::size_t chunk = 1 << 20) {
    assign_tracks();
    assign_device_tracks();
    fmt::memory_buffer out;
    out.push_back('[');
    write_metadata(out);
    write_device_metadata(out);
    auto flush = [&] {
      if (out.size() >= chunk) {
        sink(std::string_view(out.data(), out.size()));
        out.clear();
      }
    };
    // Track by track (threads by id, then the cross-thread lanes), each in
    // start order: the lists assign_tracks() sorted.
    for (auto& [tid, list] : by_thread_) {
      for (std::size_t i : list) {
        if (track_[i] != tid) continue;  // moved to a lane
        write_event(out, data_.events[i], tid);
        flush();
      }
    }
    for (std::size_t i : by_lane()) {
      write_event(out, data_.events[i], track_[i]);
      flush();
    }
    for (std::size_t i : sorted_device_events()) {
      write_device_event(out, i);
      flush();
    }
    out.append(std::string_view("\n]\n"));
    sink(std::string_view(out.data(), out.size()));
  }

 private:
  struct span {
    std::int64_t begin, end;
    std::size_t event;
  };

  template <class Event>
  static bool earlier(const Event& a, const Event& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    return a.dur > b.dur;  // longer first, so the parent comes before its child
  }

  // Each slice stays on its thread unless it breaks strict nesting there.
  // Every event of a thread goes into its list, which is sorted once, by
  // start, and then written in that order.
  void assign_tracks() {
    reserve_thread_lists();
    for (std::size_t i = 0; i < data_.events.size(); ++i) {
      const trace_event& e = data_.events[i];
      track_[i] = e.tid;
      if (e.what == trace_event::type::slice && e.id_matched && e.end_tid != e.tid) {
        moved_.push_back(i);
      } else {
        by_thread_[e.tid].push_back(i);
      }
    }
    for (auto& [tid, list] : by_thread_) keep_nested(list, moved_);
    place_on_lanes(moved_);
  }

  // Each thread's list gets its room before it is filled: they are the
  // largest arrays of the export. Counting also finds the threads (tids_).
  void reserve_thread_lists() {
    std::map<std::uint32_t, std::size_t> count;
    std::uint32_t tid = 0;
    std::size_t run = 0;
    for (const trace_event& e : data_.events) {
      if (e.tid != tid && run != 0) {
        count[tid] += run;
        run = 0;
      }
      tid = e.tid;
      ++run;
    }
    if (run != 0) count[tid] += run;
    for (auto& [t, n] : count) {
      tids_.push_back(t);
      reserve_huge(by_thread_[t], n);
    }
  }

  // Sorts event indices by start, longer first on ties (as earlier() does).
  // A thread's events come from its buffer in the order they were written,
  // which is start order unless ranges nest: that case costs one pass.
  // Otherwise the sort goes through a compact copy of the keys: sorting the
  // indices themselves would reach into the events at random on every
  // comparison.
  void sort_by_time(std::vector<std::size_t>& list) const {
    const auto& ev = data_.events;
    bool sorted = true;
    for (std::size_t k = 1; k < list.size() && sorted; ++k) sorted = !earlier(ev[list[k]], ev[list[k - 1]]);
    if (sorted) return;
    struct key {
      std::int64_t ts, neg_dur;
      std::size_t index;
      bool operator<(const key& o) const { return ts != o.ts ? ts < o.ts : neg_dur < o.neg_dur; }
    };
    std::vector<key> keys;
    keys.reserve(list.size());
    for (std::size_t i : list) keys.push_back({ev[i].ts, -ev[i].dur, i});
    std::sort(keys.begin(), keys.end());
    for (std::size_t k = 0; k < list.size(); ++k) list[k] = keys[k].index;
  }

  void keep_nested(std::vector<std::size_t>& list, std::vector<std::size_t>& moved) {
    const auto& ev = data_.events;
    sort_by_time(list);
    std::vector<span> stack;
    for (std::size_t i : list) {
      if (ev[i].what != trace_event::type::slice) continue;  // instants and counters stay
      const span s{ev[i].ts, ev[i].ts + ev[i].dur, i};
      for (;;) {
        while (!stack.empty() && stack.back().end <= s.begin) stack.pop_back();
        if (stack.empty() || stack.back().end >= s.end) break;  // nests
        if (ev[i].id_matched) break;                            // s goes
        if (!ev[stack.back().event].id_matched) break;          // two scoped ranges: keep both
        moved.push_back(stack.back().event);                    // the overlapping id range goes
        stack.pop_back();
      }
      const bool nests = stack.empty() || stack.back().end >= s.end;
      if (!nests && ev[i].id_matched) {
        moved.push_back(i);
      } else {
        stack.push_back(s);
      }
    }
  }

  // One lane (a track): its slices still open (a stack), and where the last
  // one began.
  struct lane_slices {
    std::vector<span> open;
    std::int64_t last_begin = std::numeric_limits<std::int64_t>::min();
  };

  // Places `s` on the first lane where it nests and, for a slice, begins
  // after every slice already there (a flow's end binds to the slice that
  // begins at its time on its track, so no two may); on a new lane if none.
  // Spans come in start order. Returns the lane.
  static std::size_t place(std::vector<lane_slices>& lanes, const span& s, bool slice = true) {
    std::size_t i = 0;
    for (; i < lanes.size(); ++i) {
      auto& open = lanes[i].open;
      while (!open.empty() && open.back().end <= s.begin) open.pop_back();
      const bool fresh_begin = !slice || lanes[i].last_begin < s.begin;
      if (fresh_begin && (open.empty() || open.back().end >= s.end)) break;
    }
    if (i == lanes.size()) lanes.emplace_back();
    if (slice) {
      lanes[i].open.push_back(s);
      lanes[i].last_begin = s.begin;
    }
    return i;
  }

  void place_on_lanes(std::vector<std::size_t>& moved) {
    const auto& ev = data_.events;
    std::sort(moved.begin(), moved.end(), [&](std::size_t a, std::size_t b) { return earlier(ev[a], ev[b]); });
    std::vector<lane_slices> lanes;
    for (std::size_t i : moved) {
      const span s{ev[i].ts, ev[i].ts + ev[i].dur, i};
      const std::size_t lane = place(lanes, s);
      track_[i] = lane_tid_base + static_cast<std::uint32_t>(lane);
    }
    lane_count_ = lanes.size();
  }

  // The moved slices, lane by lane, each lane in start order (moved_ is in
  // start order after place_on_lanes).
  std::vector<std::size_t> by_lane() const {
    std::vector<std::size_t> order(moved_);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return track_[a] < track_[b]; });
    return order;
  }

  void write_meta_event(fmt::memory_buffer& out, const char* what, std::uint32_t tid, bool with_tid,
                        std::string_view key, std::string_view text, long number) {
    write_meta_event_of(out, data_.pid, what, tid, with_tid, key, text, number);
  }

  void write_meta_event_of(fmt::memory_buffer& out, std::uint32_t pid, const char* what, std::uint32_t tid,
                           bool with_tid, std::string_view key, std::string_view text, long number) {
    out.append(std::string_view(first_ ? "\n" : ",\n"));
    first_ = false;
    fmt::format_to(std::back_inserter(out), R"({{"name":"{}","ph":"M","pid":{})", what, pid);
    if (with_tid) fmt::format_to(std::back_inserter(out), R"(,"tid":{})", tid);
    fmt::format_to(std::back_inserter(out), R"(,"args":{{"{}":)", key);
    if (key == "name") {
      append_json_string(out, text);
    } else {
      fmt::format_to(std::back_inserter(out), "{}", number);
    }
    out.append(std::string_view("}}"));
  }

  void write_metadata(fmt::memory_buffer& out) {
    write_meta_event(out, "process_name", 0, false, "name", data_.process_name, 0);
    write_meta_event(out, "process_sort_index", 0, false, "sort_index", "", 0);
    // Main thread first, then the others by thread id.
    std::vector<std::uint32_t> tids = tids_;
    std::stable_partition(tids.begin(), tids.end(), [&](std::uint32_t t) { return t == data_.pid; });
    long index = 0;
    for (std::uint32_t tid : tids) {
      auto it = data_.thread_names.find(tid);
      const std::string name =
          it != data_.thread_names.end() && !it->second.empty() ? it->second : fmt::format("Thread {}", tid);
      write_meta_event(out, "thread_name", tid, true, "name", name, 0);
      write_meta_event(out, "thread_sort_index", tid, true, "sort_index", "", index++);
    }
    // Threads that only ended ranges begun elsewhere have no track of their
    // own, but their names are what an `end_tid` refers to.
    for (std::uint32_t tid : end_only_threads()) {
      auto it = data_.thread_names.find(tid);
      if (it == data_.thread_names.end() || it->second.empty()) continue;
      write_meta_event(out, "thread_name", tid, true, "name", it->second, 0);
      write_meta_event(out, "thread_sort_index", tid, true, "sort_index", "", index++);
    }
    for (std::size_t lane = 0; lane < lane_count_; ++lane) {
      const auto tid = lane_tid_base + static_cast<std::uint32_t>(lane);
      const std::string name =
          lane == 0 ? std::string("cross-thread ranges") : fmt::format("cross-thread ranges {}", lane + 1);
      write_meta_event(out, "thread_name", tid, true, "name", name, 0);
      write_meta_event(out, "thread_sort_index", tid, true, "sort_index", "", index++);
    }
  }

  // Threads that ended a slice and recorded nothing themselves, by id.
  std::set<std::uint32_t> end_only_threads() const {
    std::set<std::uint32_t> out;
    for (const trace_event& e : data_.events) {
      if (e.what != trace_event::type::slice || e.end_tid == e.tid) continue;
      if (!std::binary_search(tids_.begin(), tids_.end(), e.end_tid)) out.insert(e.end_tid);
    }
    return out;
  }

  void write_event(fmt::memory_buffer& out, const trace_event& e, std::uint32_t track) {
    if (e.what == trace_event::type::counter) {
      write_counter(out, e, track);
      return;
    }
    const std::string_view name = json_name(e.name);
    const std::string_view tail = event_tail(e, track);
    raw_writer w(out, name.size() + tail.size() + 128);
    w.literal(",\n{\"name\":");
    w.put(name);
    if (e.what == trace_event::type::slice) {
      w.literal(",\"ph\":\"X\",\"ts\":");
      w.microseconds(e.ts);
      w.literal(",\"dur\":");
      w.duration(e.ts, e.dur);
    } else {
      w.literal(",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
      w.microseconds(e.ts);
    }
    w.put(tail);
    w.done();
    auto it = std::back_inserter(out);
    if (e.stream != 0) fmt::format_to(it, R"(,"stream":"{:#x}")", e.stream);
    if (e.what == trace_event::type::slice && e.end_tid != e.tid) fmt::format_to(it, R"(,"end_tid":{})", e.end_tid);
    if (e.incomplete) out.append(std::string_view(R"(,"incomplete":true)"));
    if (e.began_before_window) out.append(std::string_view(R"(,"began_before_window":true)"));
    out.append(std::string_view("}}"));
  }

  void write_counter(fmt::memory_buffer& out, const trace_event& e, std::uint32_t track) {
    const std::string_view name = json_name(e.name);
    const std::string_view domain = json_domain(e);
    auto it = std::back_inserter(out);
    fmt::format_to(it, ",\n{{\"name\":{},\"ph\":\"C\",\"ts\":", name);
    append_us(out, e.ts);
    fmt::format_to(it, R"(,"pid":{},"tid":{},"cat":{},"args":{{{}:)", data_.pid, track, domain, name);
    if (!e.value_is_double) {
      fmt::format_to(it, "{}", e.value.i64);
    } else if (std::isfinite(e.value.f64)) {
      fmt::format_to(it, "{}", e.value.f64);
    } else {
      out.append(std::string_view("null"));
    }
    out.append(std::string_view("}}"));
  }

  // What follows the times of a slice or an instant, up to its optional
  // args: the same for every event of a track, domain and kind, so it is
  // formatted once for each.
  std::string_view event_tail(const trace_event& e, std::uint32_t track) {
    const std::uint64_t key = std::uint64_t{track} << 32 | std::uint64_t{e.domain} << 8 | static_cast<std::uint8_t>(e.what);
    if (key == last_tail_key_ && last_tail_ != nullptr) return *last_tail_;
    std::string& tail = tails_[key];
    if (tail.empty()) {
      const std::string_view domain = json_domain(e);
      tail = fmt::format(R"(,"pid":{},"tid":{},"cat":{},"args":{{"domain":{},"event_type":"{}")", data_.pid, track,
                         domain, domain, e.what == trace_event::type::slice ? "start/end" : "marker");
    }
    last_tail_key_ = key;
    last_tail_ = &tail;
    return tail;
  }

  // Device tracks: one per stream, numbered in order of the streams' first
  // device event; slices of a stream that overlap, or begin together, move
  // to extra tracks.
  void assign_device_tracks() {
    const auto& dev = data_.device_events;
    device_track_.assign(dev.size(), 0);
    std::vector<std::size_t> order(dev.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return earlier(dev[a], dev[b]); });
    std::map<std::uint64_t, std::vector<lane_slices>> lanes;  // by stream
    for (std::size_t i : order) {
      const device_event& e = dev[i];
      auto found = std::find(streams_.begin(), streams_.end(), e.stream);
      const auto index = static_cast<std::uint32_t>(found - streams_.begin());
      if (found == streams_.end()) streams_.push_back(e.stream);
      auto& stream_lanes = lanes[e.stream];
      const span sp{e.ts, e.ts + e.dur, i};
      const std::size_t lane = place(stream_lanes, sp, !e.instant);
      device_track_[i] = index + 1 + static_cast<std::uint32_t>(lane) * device_overlap_tid_step;
      lanes_used_[index + 1] = std::max<std::size_t>(lanes_used_[index + 1], lane + 1);
    }
  }

  std::uint32_t device_pid() const { return device_pid_base + static_cast<std::uint32_t>(data_.device_id); }

  std::string stream_name(std::size_t index) const {
    auto it = data_.stream_names.find(streams_[index]);
    if (it != data_.stream_names.end() && !it->second.empty()) return it->second;
    return fmt::format("Stream {}", index + 1);
  }

  void write_device_metadata(fmt::memory_buffer& out) {
    if (streams_.empty()) return;
    const std::uint32_t pid = device_pid();
    std::string process = fmt::format("NPU {}", data_.device_id);
    if (data_.device_simulated) process += " (simulated)";
    auto meta = [&](const char* what, std::uint32_t tid, bool with_tid, std::string_view key, std::string_view text,
                    long number) { write_meta_event_of(out, pid, what, tid, with_tid, key, text, number); };
    meta("process_name", 0, false, "name", process, 0);
    meta("process_sort_index", 0, false, "sort_index", "", 1);
    long index = 0;
    for (std::size_t s = 0; s < streams_.size(); ++s) {
      const std::string name = stream_name(s);
      const auto base = static_cast<std::uint32_t>(s + 1);
      for (std::size_t lane = 0; lane < lanes_used_[base]; ++lane) {
        const std::uint32_t tid = base + static_cast<std::uint32_t>(lane) * device_overlap_tid_step;
        meta("thread_name", tid, true, "name", lane == 0 ? name : fmt::format("{} (overlapping {})", name, lane + 1), 0);
        meta("thread_sort_index", tid, true, "sort_index", "", index++);
      }
    }
  }

  std::vector<std::size_t> sorted_device_events() const {
    const auto& dev = data_.device_events;
    std::vector<std::size_t> order(dev.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (device_track_[a] != device_track_[b]) return device_track_[a] < device_track_[b];
      return earlier(dev[a], dev[b]);
    });
    return order;
  }

  // The device slice, and for ranges a flow from the host slice to it.
  void write_device_event(fmt::memory_buffer& out, std::size_t i) {
    const device_event& d = data_.device_events[i];
    const trace_event& host = data_.events[d.host];
    const std::string_view domain = json_domain(host);
    const std::uint32_t pid = device_pid();
    out.append(std::string_view(",\n{\"name\":"));
    out.append(json_name(host.name));
    out.append(std::string_view(d.instant ? R"(,"ph":"i","s":"t","ts":)" : R"(,"ph":"X","ts":)"));
    append_us(out, d.ts);
    if (!d.instant) {
      out.append(std::string_view(",\"dur\":"));
      append_duration(out, d.ts, d.dur);
    }
    fmt::format_to(std::back_inserter(out), R"(,"pid":{},"tid":{},"cat":)", pid, device_track_[i]);
    out.append(domain);
    out.append(std::string_view(",\"args\":{\"domain\":"));
    out.append(domain);
    fmt::format_to(std::back_inserter(out), R"(,"event_type":"{}","stream":"{:#x}","host_tid":{}}}}})",
                   d.instant ? "marker" : "start/end", d.stream, host.tid);
    if (d.instant) return;
    const std::uint64_t id = ++flows_;
    out.append(std::string_view(",\n{\"name\":\"MsTx\",\"cat\":\"MsTx\",\"ph\":\"s\",\"id\":"));
    append_int(out, id);
    out.append(std::string_view(",\"ts\":"));
    append_us(out, host.ts);
    fmt::format_to(std::back_inserter(out), R"(,"pid":{},"tid":{}}})", data_.pid, track_[d.host]);
    out.append(std::string_view(",\n{\"name\":\"MsTx\",\"cat\":\"MsTx\",\"ph\":\"f\",\"bp\":\"e\",\"id\":"));
    append_int(out, id);
    out.append(std::string_view(",\"ts\":"));
    append_us(out, d.ts);
    fmt::format_to(std::back_inserter(out), R"(,"pid":{},"tid":{}}})", pid, device_track_[i]);
  }

  // Names and domains repeat from event to event: each is escaped once, as
  // a JSON string literal with its quotes.
  std::string_view json_name(std::uint32_t index) {
    if (index >= data_.strings.size()) return "\"\"";
    if (json_names_.empty()) json_names_.resize(data_.strings.size());
    std::string& s = json_names_[index];
    if (s.empty()) s = json_literal(data_.strings[index]);
    return s;
  }
  std::string_view json_domain(const trace_event& e) {
    if (json_domains_.size() <= e.domain) json_domains_.resize(e.domain + 1u);
    std::string& s = json_domains_[e.domain];
    if (s.empty()) s = json_literal(data_.domain_of(e));
    return s;
  }
  static std::string json_literal(std::string_view text) {
    fmt::memory_buffer b;
    append_json_string(b, text);
    return std::string(b.data(), b.size());
  }

  const trace_data& data_;
  std::vector<std::string> json_names_;    // by string index; "" until first needed
  std::vector<std::string> json_domains_;  // by domain index
  std::unordered_map<std::uint64_t, std::string> tails_;  // see event_tail()
  std::uint64_t last_tail_key_ = 0;
  const std::string* last_tail_ = nullptr;
  std::vector<std::uint32_t> device_track_;
  std::vector<std::uint64_t> streams_;  // by first device event
  std::map<std::uint32_t, std::size_t> lanes_used_;
  std::uint64_t flows_ = 0;
  std::vector<std::uint32_t> track_;
  std::map<std::uint32_t, std::vector<std::size_t>> by_thread_;  // event indices of each thread, in start order
  std::vector<std::size_t> moved_;  // slices that leave their thread's track, in start order
  std::vector<std::uint32_t> tids_;  // threads with events, by id
  std::size_t lane_count_ = 0;
  bool first_ = true;
};

/// Writes trace_view.json into `dir`, streaming.
inline void write_trace_view(const trace_data& data, output_directory& dir) {
  file_writer file(dir, "trace_view.json");
  trace_view_writer(data).write([&](std::string_view piece) { file.write(piece); });
  file.close();
}

/// Writes a new file at `path` (in an existing directory), streaming.
inline void write_trace_view(const trace_data& data, const std::string& path) {
  const std::filesystem::path p(path);
  output_directory dir = output_directory::open_existing(p.has_parent_path() ? p.parent_path() : ".");
  file_writer file(dir, p.filename().string());
  trace_view_writer(data).write([&](std::string_view piece) { file.write(piece); });
  file.close();
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
