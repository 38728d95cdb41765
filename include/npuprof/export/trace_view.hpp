// trace_view.json: the Trace Event Format timeline that Perfetto UI,
// chrome://tracing and MindStudio Insight open.
//
// Slices on one thread track always nest strictly. Scoped ranges nest by
// construction; a range begun with an id that does not nest with its thread's
// other slices (it ended on another thread, or overlaps them) is placed on a
// "cross-thread ranges" track of its own instead.
#pragma once

#include "../marker/abi.hpp"
#include "../marker/platform.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "../trace_data.hpp"
#include "file.hpp"
#include "float64_time.hpp"
#include "json_escape.hpp"
#include "lanes.hpp"

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

/// The leading digits of the last timestamp written: see
/// raw_writer::microseconds().
struct leading_digits {
  std::uint64_t key = 0;
  char text[16] = {};  // copied whole: at most 13 digits are used
  std::size_t size = 0;
};

/// Text written many times, with 63 bytes of padding after it, so that it
/// is copied in whole blocks of 64 (raw_writer::put).
class padded_text {
 public:
  static constexpr std::size_t block = 64;
  static constexpr std::size_t padding = block - 1;
  padded_text() = default;
  explicit padded_text(std::string_view s) : text_(s) { text_.append(padding, '\0'); }
  bool empty() const noexcept { return text_.empty(); }
  std::string_view view() const noexcept { return {text_.data(), text_.size() - padding}; }

 private:
  std::string text_;
};

/// Writes into a memory buffer through a plain pointer, after reserving the
/// most it may write (and a block more for block copies): one capacity
/// check per event instead of one per piece (most of the export's time went
/// into those checks).
class raw_writer {
 public:
  raw_writer(fmt::memory_buffer& out, std::size_t most) : out_(out) {
    out.try_reserve(out.size() + most + padded_text::block);
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
  /// As put(), in whole blocks: no library call for short text.
  void put(const padded_text& t) noexcept {
    const std::string_view s = t.view();
    for (std::size_t i = 0; i < s.size(); i += padded_text::block) {
      std::memcpy(p_ + i, s.data() + i, padded_text::block);
    }
    p_ += s.size();
  }
  void integer(std::uint64_t v) noexcept { put_digits(fmt::format_int(v)); }
  /// Nanoseconds as microseconds with three decimals (negative: 0).
  /// Timestamps written one after another mostly fall in the same
  /// millisecond: its digits are kept from the last call (`high`), and only
  /// the last six digits are made.
  void microseconds(std::int64_t ns, leading_digits& high) noexcept {
    if (ns < 0) ns = 0;
    const auto v = static_cast<std::uint64_t>(ns);
    const std::uint64_t ms = v / 1'000'000;  // above the last six digits
    if (ms == 0) {
      microseconds(ns);
      return;
    }
    if (ms != high.key || high.size == 0) {
      const fmt::format_int d(ms);
      std::memcpy(high.text, d.data(), d.size());
      high.size = d.size();
      high.key = ms;
    }
    std::memcpy(p_, high.text, sizeof high.text);
    p_ += high.size;
    const auto low = static_cast<unsigned>(v - ms * 1'000'000);  // us (3 digits) and ns (3)
    const unsigned us = low / 1000;
    p_[0] = static_cast<char>('0' + us / 100);
    std::memcpy(p_ + 1, pair(us % 100), 2);
    p_ += 3;
    fraction(low - us * 1000);
  }
  void microseconds(std::int64_t ns) noexcept {
    if (ns < 0) ns = 0;
    put_digits(fmt::format_int(ns / 1000));
    fraction(static_cast<unsigned>(ns % 1000));
  }
  /// `v` as "0x..." in lower-case hexadecimal.
  void hex(std::uint64_t v) noexcept {
    char digits[16];
    int n = 0;
    do {
      digits[n++] = "0123456789abcdef"[v & 15];
      v >>= 4;
    } while (v != 0);
    *p_++ = '0';
    *p_++ = 'x';
    while (n > 0) *p_++ = digits[--n];
  }
  /// A slice's duration, as append_duration() writes it. False where no
  /// duration lands on the end as read (see landing_double()): `read_end`
  /// is then where the slice ends as read, just before.
  bool duration(std::int64_t ts_ns, std::int64_t dur_ns, double& read_end) noexcept {
    // Most slices last under a second, and their three decimals land.
    const bool usual = ts_ns >= 0 && static_cast<std::uint64_t>(dur_ns) < 1'000'000'000;
    const double ts = reads_as(ts_ns), end = reads_as(ts_ns + dur_ns);  // as a reader gets them
    if (usual && ts + static_cast<double>(dur_ns) / 1000.0 == end) {    // as reads_as(): a duration under a second
      const auto us = static_cast<unsigned>(dur_ns / 1000);
      if (us < 10) {
        *p_++ = static_cast<char>('0' + us);
      } else if (us < 100) {
        std::memcpy(p_, pair(us), 2);
        p_ += 2;
      } else {
        integer(us);
      }
      fraction(static_cast<unsigned>(dur_ns % 1000));
      return true;
    }
    return duration_to(ts_ns, dur_ns, usual ? &end : nullptr, read_end);
  }
  /// As duration(), through write_duration() (see there for `target`).
  NPUPROF_NOINLINE bool duration_to(std::int64_t ts_ns, std::int64_t dur_ns, const double* target,
                                    double& read_end) noexcept {
    // Within the room reserved: bytes past the duration are written over next.
    const written_duration d = write_duration(p_, ts_ns, dur_ns, target);
    p_ += d.size;
    if (!d.landed) read_end = d.read_end;
    return d.landed;
  }
  /// Ends the raw writing: the buffer's size covers what was written.
  void done() noexcept { out_.try_resize(static_cast<std::size_t>(p_ - out_.data())); }

 private:
  void put_digits(const fmt::format_int& d) noexcept { put(std::string_view(d.data(), d.size())); }

  // ".ddd": `frac` < 1000 thousandths.
  void fraction(unsigned frac) noexcept {
    p_[0] = '.';
    p_[1] = static_cast<char>('0' + frac / 100);
    std::memcpy(p_ + 2, pair(frac % 100), 2);
    p_ += 4;
  }

  static const char* pair(unsigned n) noexcept { return digit_pair(n); }

  fmt::memory_buffer& out_;
  char* p_;
};

/// Writes trace_view.json as events come, thread by thread: what stays on a
/// thread's track is written at once, and only what moves to another track
/// (cross-thread ranges, device events) is kept until finish(). Metadata
/// (track names and order) comes last, when every track is known.
class trace_view_writer {
 public:
  using sink_type = std::function<void(std::string_view)>;

  /// `data` says what the document says about the process and holds the
  /// strings the events name (it may grow between add() calls).
  trace_view_writer(const trace_data& data, sink_type sink, std::size_t chunk = 1 << 20)
      : data_(data), sink_(std::move(sink)), chunk_(chunk) {
    out_.push_back('[');
    write_meta_event(out_, "process_name", 0, false, "name", data_.process_name, 0);
    write_meta_event(out_, "process_sort_index", 0, false, "sort_index", "", 0);
  }

  /// Events of thread `tid` (and the device events that point into them).
  /// `whole`: all of the thread's events, which are sorted and checked for
  /// strict nesting; else a window of a thread whose slices nest by
  /// construction, in start order (longer first on ties) from window to
  /// window.
  void add(const std::vector<trace_event>& events, const std::vector<device_event>& device, std::uint32_t tid,
           bool whole) {
    if (events.empty()) return;
    if (tids_.empty() || tids_.back() != tid) {
      tids_.push_back(tid);
      open_.clear();
    }
    if (!whole && device.empty()) {  // the common case: everything stays, in this order
      for (const trace_event& e : events) {
        if (e.what == trace_event::type::slice && (e.end_tid != e.tid || e.id_matched)) {
          add_each(events, device, tid, whole);
          return;
        }
      }
      for (const trace_event& e : events) {
        if (e.what == trace_event::type::slice && !stays_nested(e)) {  // a scoped range: ids went above
          ++overlapping_ranges_;
          moved_.push_back(e);
          continue;
        }
        write_event(out_, e, tid);
        flush();
      }
      return;
    }
    add_each(events, device, tid, whole);
  }

  /// Scoped ranges that overlapped others on their thread without nesting
  /// (ended out of scope order: objects moved or destroyed out of order),
  /// drawn on a cross-thread ranges track instead.
  std::uint64_t overlapping_ranges() const noexcept { return overlapping_ranges_; }

 private:
  void add_each(const std::vector<trace_event>& events, const std::vector<device_event>& device, std::uint32_t tid,
                bool whole) {
    std::vector<std::size_t>& list = list_;
    list.clear();
    std::vector<std::size_t> moved;
    for (std::size_t i = 0; i < events.size(); ++i) {
      const trace_event& e = events[i];
      if (e.what == trace_event::type::slice && e.end_tid != e.tid) end_tids_.insert(e.end_tid);
      if (e.what == trace_event::type::slice && e.id_matched && e.end_tid != e.tid) {
        end_tids_.insert(e.tid);  // named for its begin_tid
        moved.push_back(i);
      } else {
        list.push_back(i);
      }
    }
    if (whole) {
      keep_nested(events, list, moved);
    } else {  // in start order already
      keep_nested_across_windows(events, list, moved);
    }
    // Where each event went: its track, or its place among the moved.
    constexpr std::size_t stays = ~std::size_t{0};
    std::vector<std::size_t> moved_to;
    if (!moved.empty() || !device.empty()) moved_to.assign(events.size(), stays);
    for (std::size_t i : moved) {
      moved_to[i] = moved_.size();
      moved_.push_back(events[i]);
    }
    for (std::size_t i : list) {
      if (!moved_to.empty() && moved_to[i] != stays) continue;
      write_event(out_, events[i], tid);
      flush();
    }
    for (const device_event& d : device) {
      const std::size_t m = moved_to[d.host];
      device_.push_back({d, events[d.host], m == stays ? tid : 0, m});
    }
  }

 public:
  /// Writes what was kept back and the metadata, and ends the document.
  void finish() {
    place_on_lanes();
    for (std::size_t i : by_lane()) {
      write_event(out_, moved_[i], moved_track_[i]);
      flush();
    }
    assign_device_tracks();
    for (std::size_t i : sorted_device_events()) {
      write_device_event(out_, i);
      flush();
    }
    write_metadata(out_);
    write_device_metadata(out_);
    out_.append(std::string_view("\n]\n"));
    sink_(std::string_view(out_.data(), out_.size()));
    out_.clear();
  }

 private:
  using span = slice_span;

  /// A device event with what it needs of its host event, which may be
  /// written long before it.
  struct device_row {
    device_event dev;
    trace_event host;
    std::uint32_t host_track;  // the host event's track, unless it moved
    std::size_t moved;         // its index in moved_, or ~0
  };

  void flush() {
    if (out_.size() < chunk_) return;
    sink_(std::string_view(out_.data(), out_.size()));
    out_.clear();
  }

  template <class Event>
  static bool earlier(const Event& a, const Event& b) {
    if (a.ts != b.ts) return a.ts < b.ts;
    return a.dur > b.dur;  // longer first, so the parent comes before its child
  }

  // Sorts event indices by start, longer first on ties (as earlier() does).
  // Events come in the order they were written, which is start order unless
  // ranges nest: that case costs one pass. Otherwise the sort goes through a
  // compact copy of the keys: sorting the indices themselves would reach
  // into the events at random on every comparison.
  void sort_by_time(const std::vector<trace_event>& ev, std::vector<std::size_t>& list) {
    bool sorted = true;
    for (std::size_t k = 1; k < list.size() && sorted; ++k) sorted = !earlier(ev[list[k]], ev[list[k - 1]]);
    if (sorted) return;
    keys_.clear();
    keys_.reserve(list.size());
    for (std::size_t i : list) keys_.push_back({ev[i].ts, -ev[i].dur, i});
    std::sort(keys_.begin(), keys_.end());
    for (std::size_t k = 0; k < list.size(); ++k) list[k] = keys_[k].index;
  }

  // Whether slice `e`, the next in start order on the current thread, nests
  // in the slices still open there; if so it is one of them now.
  bool stays_nested(const trace_event& e) {
    const span s{e.ts, e.ts + e.dur, 0};
    while (!open_.empty() && open_.back().end <= s.begin) open_.pop_back();
    if (open_.empty() || open_.back().end >= s.end) {
      open_.push_back(s);
      return true;
    }
    return false;
  }

  // A window of a thread whose slices nest by construction: those that do
  // not after all move to `moved`.
  void keep_nested_across_windows(const std::vector<trace_event>& ev, std::vector<std::size_t>& list,
                                  std::vector<std::size_t>& moved) {
    std::size_t kept = 0;
    for (std::size_t i : list) {
      if (ev[i].what == trace_event::type::slice && !stays_nested(ev[i])) {
        moved.push_back(i);
        if (!ev[i].id_matched) ++overlapping_ranges_;
      } else {
        list[kept++] = i;
      }
    }
    list.resize(kept);
  }

  // Each slice stays on its thread unless it breaks strict nesting there: a
  // range begun with an id that overlaps others moves to `moved`, and of two
  // scoped ranges that overlap, the later.
  void keep_nested(const std::vector<trace_event>& ev, std::vector<std::size_t>& list,
                   std::vector<std::size_t>& moved) {
    sort_by_time(ev, list);
    std::vector<span> stack;
    std::vector<std::size_t> stay;
    stay.reserve(list.size());
    std::vector<bool> gone(ev.size(), false);
    for (std::size_t i : list) {
      if (ev[i].what != trace_event::type::slice) {  // instants and counters stay
        stay.push_back(i);
        continue;
      }
      const span s{ev[i].ts, ev[i].ts + ev[i].dur, i};
      for (;;) {
        while (!stack.empty() && stack.back().end <= s.begin) stack.pop_back();
        if (stack.empty() || stack.back().end >= s.end) break;  // nests
        if (ev[i].id_matched) break;                            // s goes
        if (!ev[stack.back().event].id_matched) break;          // two scoped ranges: the later goes
        moved.push_back(stack.back().event);                    // the overlapping id range goes
        gone[stack.back().event] = true;
        stack.pop_back();
      }
      const bool nests = stack.empty() || stack.back().end >= s.end;
      if (!nests) {  // an id range, or a scoped range over another one
        moved.push_back(i);
        gone[i] = true;
        if (!ev[i].id_matched) ++overlapping_ranges_;
      } else {
        stack.push_back(s);
        stay.push_back(i);
      }
    }
    list.clear();
    for (std::size_t i : stay) {
      if (!gone[i]) list.push_back(i);
    }
  }

  void place_on_lanes() {
    const auto& ev = moved_;
    moved_order_.resize(ev.size());
    for (std::size_t i = 0; i < ev.size(); ++i) moved_order_[i] = i;
    std::sort(moved_order_.begin(), moved_order_.end(),
              [&](std::size_t a, std::size_t b) { return earlier(ev[a], ev[b]); });
    moved_track_.assign(ev.size(), 0);
    lane_set lanes;
    for (std::size_t i : moved_order_) {
      const span s{ev[i].ts, ev[i].ts + ev[i].dur, i};
      moved_track_[i] = lane_tid_base + static_cast<std::uint32_t>(lanes.place(s));
    }
    lane_count_ = lanes.size();
  }

  // The moved slices, lane by lane, each lane in start order.
  std::vector<std::size_t> by_lane() const {
    std::vector<std::size_t> order(moved_order_);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return moved_track_[a] < moved_track_[b]; });
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
    // Main thread first, then the others by thread id.
    std::vector<std::uint32_t> tids = tids_;
    std::sort(tids.begin(), tids.end());
    tids.erase(std::unique(tids.begin(), tids.end()), tids.end());
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
    // own, but their names are what an `end_tid` (or a `begin_tid`) refers to.
    for (std::uint32_t tid : end_tids_) {
      if (std::binary_search(tids.begin(), tids.end(), tid)) continue;
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

  void write_event(fmt::memory_buffer& out, const trace_event& e, std::uint32_t track) {
    if (e.what == trace_event::type::counter) {
      write_counter(out, e, track);
      return;
    }
    const bool slice = e.what == trace_event::type::slice;
    const std::uint64_t key = tail_key(e, track);
    if (head_ == nullptr || e.name != texts_name_ || key != texts_key_) find_texts(e, track, key);
    const padded_text& head = *head_;
    const padded_text& tail = *tail_;
    raw_writer w(out, head.view().size() + tail.view().size() + 200);
    w.put(head);
    w.microseconds(e.ts, high_);
    if (slice) {
      w.literal(",\"dur\":");
      slice_duration(w, e, track);
    }
    w.put(tail);
    if (e.stream != 0) {
      w.literal(",\"stream\":\"");
      w.hex(e.stream);
      w.literal("\"");
    }
    if (slice && e.end_tid != e.tid) {
      w.literal(",\"end_tid\":");
      w.integer(e.end_tid);
    }
    if (track != e.tid) {  // on a cross-thread track: the thread that began it
      w.literal(",\"begin_tid\":");
      w.integer(e.tid);
    }
    if (e.incomplete) w.literal(",\"incomplete\":true");
    if (e.began_before_window) w.literal(",\"began_before_window\":true");
    w.literal("}}");
    w.done();
  }

  // A slice that ended short of its end as read (see slice_duration()).
  struct short_end {
    std::uint32_t track;
    std::int64_t end_ns;
    double read_end;  // just before end_ns as read
  };

  // A slice's duration. Where no duration lands on its end as read (a slice
  // lasting longer than the uptime it began at can meet that: rounding ties
  // leave no double), it ends just before, and the slices inside it whose
  // ends read as later (written after it: by start) end there too, so that
  // they still nest as read.
  NPUPROF_ALWAYS_INLINE void slice_duration(raw_writer& w, const trace_event& e, std::uint32_t track) {
    double read_end = 0;
    if (NPUPROF_UNLIKELY(!short_ends_.empty())) {
      if (short_end* outer = short_end_of(e, track)) {
        if (!w.duration_to(e.ts, e.dur, &outer->read_end, read_end)) outer->read_end = read_end;
        return;
      }
    }
    if (!w.duration(e.ts, e.dur, read_end)) short_ends_.push_back({track, e.ts + e.dur, read_end});
  }

  // Of the slices that ended short and hold `e` (on its track, ending after
  // it begins: a track's slices are written together, by start), the one
  // whose end as read comes first, if `e` as read would end after it. The
  // others are let go.
  NPUPROF_COLD short_end* short_end_of(const trace_event& e, std::uint32_t track) {
    short_end* found = nullptr;
    const double end = reads_as(std::max<std::int64_t>(e.ts, 0) + std::max<std::int64_t>(e.dur, 0));
    for (std::size_t i = 0; i < short_ends_.size();) {
      short_end& s = short_ends_[i];
      if (s.track != track || s.end_ns <= e.ts) {
        s = short_ends_.back();
        short_ends_.pop_back();
        continue;
      }
      if (end > s.read_end && (found == nullptr || s.read_end < found->read_end)) found = &s;
      ++i;
    }
    return found;
  }

  // The texts before and after the times of an event: those of the event
  // before, mostly.
  NPUPROF_COLD void find_texts(const trace_event& e, std::uint32_t track, std::uint64_t key) {
    head_ = &event_head(e.name, e.what == trace_event::type::slice);  // may move other heads: head_ was one
    tail_ = &event_tail(e, track, key);
    texts_name_ = e.name;
    texts_key_ = key;
  }

  // What comes before the start time of a slice or an instant: the same for
  // every event of a name and kind, so it is made once for each.
  const padded_text& event_head(std::uint32_t name, bool slice) {
    const std::size_t key = std::size_t{name} * 2 + (slice ? 1 : 0);
    if (heads_.size() <= key) heads_.resize(std::max<std::size_t>(key + 1, data_.strings.size() * 2));
    padded_text& head = heads_[key];
    if (head.empty()) {
      std::string text = ",\n{\"name\":";
      text += json_name(name);
      text += slice ? ",\"ph\":\"X\",\"ts\":" : ",\"ph\":\"i\",\"s\":\"t\",\"ts\":";
      head = padded_text(text);
    }
    return head;
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
  static std::uint64_t tail_key(const trace_event& e, std::uint32_t track) noexcept {
    return std::uint64_t{track} << 32 | std::uint64_t{e.domain} << 8 | static_cast<std::uint8_t>(e.what);
  }
  const padded_text& event_tail(const trace_event& e, std::uint32_t track, std::uint64_t key) {
    padded_text& tail = tails_[key];
    if (tail.empty()) {
      const std::string_view domain = json_domain(e);
      tail =
          padded_text(fmt::format(R"(,"pid":{},"tid":{},"cat":{},"args":{{"domain":{},"event_type":"{}")", data_.pid,
                                  track, domain, domain, e.what == trace_event::type::slice ? "start/end" : "marker"));
    }
    return tail;
  }

  std::uint32_t host_track(const device_row& r) const {
    return r.moved == ~std::size_t{0} ? r.host_track : moved_track_[r.moved];
  }

  // Device tracks: one per stream, numbered in order of the streams' first
  // device event; slices of a stream that overlap, or begin together, move
  // to extra tracks.
  void assign_device_tracks() {
    device_track_.assign(device_.size(), 0);
    std::vector<std::size_t> order(device_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return earlier(device_[a].dev, device_[b].dev); });
    std::map<std::uint64_t, lane_set> lanes;  // by stream
    for (std::size_t i : order) {
      const device_event& e = device_[i].dev;
      auto found = std::find(streams_.begin(), streams_.end(), e.stream);
      const auto index = static_cast<std::uint32_t>(found - streams_.begin());
      if (found == streams_.end()) streams_.push_back(e.stream);
      auto& stream_lanes = lanes[e.stream];
      const span sp{e.ts, e.ts + e.dur, i};
      const std::size_t lane = stream_lanes.place(sp, !e.instant);
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
        meta("thread_name", tid, true, "name", lane == 0 ? name : fmt::format("{} (overlapping {})", name, lane + 1),
             0);
        meta("thread_sort_index", tid, true, "sort_index", "", index++);
      }
    }
  }

  std::vector<std::size_t> sorted_device_events() const {
    std::vector<std::size_t> order(device_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (device_track_[a] != device_track_[b]) return device_track_[a] < device_track_[b];
      return earlier(device_[a].dev, device_[b].dev);
    });
    return order;
  }

  // The device slice, and for ranges a flow from the host slice to it.
  void write_device_event(fmt::memory_buffer& out, std::size_t i) {
    const device_event& d = device_[i].dev;
    const trace_event& host = device_[i].host;
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
    fmt::format_to(std::back_inserter(out), R"(,"pid":{},"tid":{}}})", data_.pid, host_track(device_[i]));
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
    if (json_names_.size() < data_.strings.size()) json_names_.resize(data_.strings.size());
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

  struct sort_key {
    std::int64_t ts, neg_dur;
    std::size_t index;
    bool operator<(const sort_key& o) const { return ts != o.ts ? ts < o.ts : neg_dur < o.neg_dur; }
  };

  const trace_data& data_;
  sink_type sink_;
  std::size_t chunk_;
  fmt::memory_buffer out_;
  std::vector<std::size_t> list_;                         // reused from window to window
  std::vector<sort_key> keys_;                            // likewise
  std::vector<std::string> json_names_;                   // by string index; "" until first needed
  std::vector<padded_text> heads_;                        // see event_head()
  leading_digits high_;                                   // see raw_writer::microseconds()
  std::vector<std::string> json_domains_;                 // by domain index
  std::unordered_map<std::uint64_t, padded_text> tails_;  // see event_tail()
  const padded_text* head_ = nullptr;                     // the last event's texts (find_texts())
  const padded_text* tail_ = nullptr;
  std::uint32_t texts_name_ = 0;
  std::uint64_t texts_key_ = 0;
  std::vector<short_end> short_ends_;  // see slice_duration()
  std::vector<span> open_;             // slices open on the current thread's track
  std::uint64_t overlapping_ranges_ = 0;
  std::vector<trace_event> moved_;          // slices that leave their thread's track
  std::vector<std::size_t> moved_order_;    // moved_ in start order
  std::vector<std::uint32_t> moved_track_;  // the lane of each
  std::vector<device_row> device_;
  std::vector<std::uint32_t> device_track_;
  std::vector<std::uint64_t> streams_;  // by first device event
  std::map<std::uint32_t, std::size_t> lanes_used_;
  std::uint64_t flows_ = 0;
  std::vector<std::uint32_t> tids_;   // threads with events on their own track
  std::set<std::uint32_t> end_tids_;  // threads that ended a slice begun elsewhere, or began one moved
  std::size_t lane_count_ = 0;
  bool first_ = true;
};

/// Writes all of `data` with `w`, thread by thread.
inline void write_all(const trace_data& data, trace_view_writer& w) {
  std::map<std::uint32_t, std::vector<std::size_t>> by_thread;
  for (std::size_t i = 0; i < data.events.size(); ++i) by_thread[data.events[i].tid].push_back(i);
  std::vector<std::size_t> index_in_thread(data.events.size());
  std::map<std::uint32_t, std::vector<device_event>> device_by_thread;
  for (auto& [tid, list] : by_thread) {
    for (std::size_t k = 0; k < list.size(); ++k) index_in_thread[list[k]] = k;
  }
  for (device_event d : data.device_events) {
    if (d.host >= data.events.size()) continue;
    const std::uint32_t tid = data.events[d.host].tid;
    d.host = index_in_thread[d.host];
    device_by_thread[tid].push_back(d);
  }
  std::vector<trace_event> events;
  for (auto& [tid, list] : by_thread) {
    events.clear();
    for (std::size_t i : list) events.push_back(data.events[i]);
    w.add(events, device_by_thread[tid], tid, true);
  }
  w.finish();
}

/// Writes trace_view.json into `dir`, streaming.
inline void write_trace_view(const trace_data& data, output_directory& dir) {
  file_writer file(dir, "trace_view.json");
  trace_view_writer w(data, [&](std::string_view piece) { file.write(piece); });
  write_all(data, w);
  file.close();
}

/// Writes a new file at `path` (in an existing directory), streaming.
inline void write_trace_view(const trace_data& data, const std::string& path) {
  const std::filesystem::path p(path);
  output_directory dir = output_directory::open_existing(p.has_parent_path() ? p.parent_path() : ".");
  file_writer file(dir, p.filename().string());
  trace_view_writer w(data, [&](std::string_view piece) { file.write(piece); });
  write_all(data, w);
  file.close();
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
