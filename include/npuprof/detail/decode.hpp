// Turns the raw records of buffer segments into trace_data: validates each
// record, resolves strings, and pairs range begins with their ends by id.
#pragma once

#include "abi.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../trace_data.hpp"
#include "chunk.hpp"
#include "device_hook.hpp"
#include "device_times.hpp"
#include "record.hpp"
#include "state.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A run of published records in one chunk.
struct segment {
  chunk* source;
  const std::uint64_t* from;
  const std::uint64_t* to;
  std::uint32_t tid;
  bool owned;  // taken from the full queue: recycle after decoding
  std::int64_t drained_ns = 0;  // steady ns when it was taken: its records are older
  const chunk* origin = nullptr;  // the chunk the records were in (also for copies)
};

class decoder {
 public:
  decoder(trace_data& out, std::uint64_t start_ticks, const device_times* device = nullptr)
      : out_(out), start_ticks_(start_ticks), device_(device) {
    out_.strings.emplace_back();  // index 0: ""
    string_index_.emplace("", 0);
  }

  void add(const segment& s) {
    out_.counts.buffer_bytes += static_cast<std::uint64_t>(s.to - s.from) * sizeof(std::uint64_t);
    const std::uint64_t* p = s.from;
    while (p < s.to) {
      const std::size_t n = record_words(p, s.to);
      if (n == 0) {
        ++out_.counts.corrupt_records;
        return;
      }
      if (p[0] >= start_ticks_) decode_one(p, s.tid);  // older records belong to no session
      p += n;
    }
  }

  /// A flight recorder lets old records go: an end whose begin is gone
  /// began before the window, and is drawn from the start of the data.
  void begins_may_be_gone(bool gone) noexcept { begins_may_be_gone_ = gone; }

  /// Pairs ends with begins; ranges left open end at `end_ticks`. When ends
  /// were dropped (`ends_dropped`), a range without an end may have lost it:
  /// it is not drawn as if it lasted to the end.
  void finish(std::uint64_t end_ticks, bool ends_dropped = false) {
    // The first end in time of each id wins: ends of one range may come from
    // several threads, and buffers are read thread by thread.
    for (std::size_t i = 0; i < ends_.size(); ++i) {
      const pending_end& e = ends_[i];
      auto it = open_.find(e.id);
      if (it == open_.end()) {
        orphan_end(e);
        continue;
      }
      std::size_t& first = it->second.end;
      if (first != no_end) {
        ++out_.counts.repeated_range_ends;
        if (ends_[first].ticks <= e.ticks) continue;
      }
      first = i;
    }
    for (std::size_t i = 0; i < ends_.size(); ++i) {
      const pending_end& e = ends_[i];
      auto it = open_.find(e.id);
      if (it == open_.end() || it->second.end != i) continue;
      trace_event& ev = out_.events[it->second.event];
      ev.dur = out_.clock.to_ns(e.ticks) - ev.ts;
      if (ev.dur < 0) ev.dur = 0;
      ev.end_tid = e.tid;
      auto dev = open_device_.find(e.id);
      if (dev != open_device_.end()) {
        add_device_slice(it->second.event, dev->second.stream, dev->second.seq, e.stream, e.device_seq);
      }
    }
    for (auto& [id, range] : open_) {
      if (range.end != no_end) continue;
      trace_event& ev = out_.events[range.event];
      ev.incomplete = true;
      if (ends_dropped) {
        ev.dur = 0;  // its end may be among the dropped: how long it lasted is unknown
        ++out_.counts.ranges_without_end;
      } else {
        ev.dur = out_.clock.to_ns(end_ticks) - ev.ts;
        if (ev.dur < 0) ev.dur = 0;
        ++out_.counts.open_ranges;
      }
    }
    open_.clear();
    open_device_.clear();
    ends_.clear();
  }

 private:
  struct pending_end {
    std::uint64_t id;
    std::uint64_t ticks;
    std::uint32_t tid;
    std::uint64_t stream;
    std::uint64_t device_seq;
  };

  static constexpr std::size_t no_end = ~std::size_t{0};

  /// A begun range: its event, and the index of its first end in ends_.
  struct open_range {
    std::size_t event;
    std::size_t end = no_end;
  };

  /// An end whose begin is not in the data: a caller's unknown id, or, in a
  /// flight recorder, a range that began before what was kept.
  void orphan_end(const pending_end& e) {
    const bool issued_id = (e.id >> 40) != 0;  // range ids carry their thread buffer's number up there
    if (!begins_may_be_gone_ || !issued_id) {
      ++out_.counts.unmatched_range_ends;
      return;
    }
    ++out_.counts.began_before_window;
    trace_event& ev = out_.events.emplace_back();
    ev.what = trace_event::type::slice;
    ev.began_before_window = true;
    ev.id_matched = true;
    ev.name = intern("(began before the window)");
    ev.tid = ev.end_tid = e.tid;
    ev.ts = std::min(out_.start_ns, out_.clock.to_ns(e.ticks));
    ev.dur = out_.clock.to_ns(e.ticks) - ev.ts;
  }

  struct device_ref {
    std::uint64_t stream;
    std::uint64_t seq;
  };

  /// The device time of event `seq` on `stream`; counts events that were
  /// recorded but never resolved.
  bool device_time(std::uint64_t stream, std::uint64_t seq, std::int64_t& out) {
    if (seq == no_device_event || device_ == nullptr) return false;  // dropped: counted by the backend
    if (device_->host_ns(stream, seq, out)) return true;
    ++out_.counts.device_unresolved;
    return false;
  }

  void add_device_slice(std::size_t host, std::uint64_t stream, std::uint64_t begin, std::uint64_t end_stream,
                        std::uint64_t end) {
    std::int64_t b = 0, e = 0;
    const bool have_b = device_time(stream, begin, b);
    const bool have_e = device_time(end_stream, end, e);
    if (!have_b || !have_e) return;
    out_.device_events.push_back({host, stream, b, e > b ? e - b : 0, false});
  }

  /// Words of the record at p, or 0 when it is not a valid record.
  static std::size_t record_words(const std::uint64_t* p, const std::uint64_t* to) {
    if (to - p < 2) return 0;
    const kind k = tag_kind(p[1]);
    if (k < kind::complete || k > kind::counter_copy) return 0;
    if (tag_has_device(p[1]) && !tag_has_stream(p[1])) return 0;
    std::size_t n = fixed_words(k) + stream_words(p[1]);
    if (has_copied_bytes(k)) {
      const std::uint64_t len = tag_payload(p[1]);
      if (len > max_message) return 0;
      n += words_for_bytes(static_cast<std::size_t>(len));
    }
    return static_cast<std::size_t>(to - p) >= n ? n : 0;
  }

  std::uint32_t intern(std::string_view s) {
    auto it = string_index_.find(std::string(s));
    if (it != string_index_.end()) return it->second;
    const auto index = static_cast<std::uint32_t>(out_.strings.size());
    out_.strings.emplace_back(s);
    string_index_.emplace(out_.strings.back(), index);
    return index;
  }

  std::uint32_t registered(std::uint64_t id) {
    auto it = registered_index_.find(id);
    if (it != registered_index_.end()) return it->second;
    const std::uint32_t index = intern(state().strings.lookup(id));
    registered_index_.emplace(id, index);
    return index;
  }

  std::uint32_t copied(const std::uint64_t* bytes, std::uint64_t len) {
    return intern(std::string_view(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(len)));
  }

  trace_event& push(trace_event::type t, const std::uint64_t* p, std::uint32_t tid) {
    trace_event& e = out_.events.emplace_back();
    e.what = t;
    e.domain = static_cast<std::uint16_t>(tag_domain(p[1]));
    e.tid = e.end_tid = tid;
    e.ts = out_.clock.to_ns(p[0]);
    if (tag_has_stream(p[1])) e.stream = p[fixed_words(tag_kind(p[1]))];
    return e;
  }

  void decode_one(const std::uint64_t* p, std::uint32_t tid) {
    const std::uint64_t tag = p[1];
    const kind k = tag_kind(tag);
    const std::uint64_t payload = tag_payload(tag);
    const std::size_t fixed = fixed_words(k);
    const std::uint64_t* bytes = p + fixed + stream_words(tag);
    const bool device = tag_has_device(tag);
    const std::uint64_t stream = tag_has_stream(tag) ? p[fixed] : 0;
    switch (k) {
      case kind::complete: {
        trace_event& e = push(trace_event::type::slice, p, tid);
        e.name = registered(payload);
        e.dur = out_.clock.to_ns(p[2]) - e.ts;
        if (e.dur < 0) e.dur = 0;
        if (device) add_device_slice(out_.events.size() - 1, stream, p[fixed + 1], stream, p[fixed + 2]);
        break;
      }
      case kind::begin_ref:
      case kind::begin_copy: {
        trace_event& e = push(trace_event::type::slice, p, tid);
        e.name = k == kind::begin_ref ? registered(payload) : copied(bytes, payload);
        e.id_matched = true;
        open_[p[2]] = {out_.events.size() - 1};
        if (device) open_device_[p[2]] = {stream, p[fixed + 1]};
        break;
      }
      case kind::end:
        ends_.push_back({p[2], p[0], tid, stream, device ? p[fixed + 1] : no_device_event});
        break;
      case kind::mark_ref:
      case kind::mark_copy: {
        trace_event& e = push(trace_event::type::instant, p, tid);
        e.name = k == kind::mark_ref ? registered(payload) : copied(bytes, payload);
        std::int64_t at = 0;
        if (device && device_time(stream, p[fixed + 1], at)) {
          out_.device_events.push_back({out_.events.size() - 1, stream, at, 0, true});
        }
        break;
      }
      case kind::counter_ref:
      case kind::counter_copy: {
        trace_event& e = push(trace_event::type::counter, p, tid);
        e.name = k == kind::counter_ref ? registered(payload) : copied(bytes, payload);
        e.value_is_double = (p[3] & counter_is_double) != 0;
        if (e.value_is_double) {
          std::memcpy(&e.value.f64, &p[2], sizeof(double));
        } else {
          e.value.i64 = static_cast<std::int64_t>(p[2]);
        }
        break;
      }
    }
  }

  trace_data& out_;
  std::uint64_t start_ticks_;
  std::unordered_map<std::string, std::uint32_t> string_index_;
  std::unordered_map<std::uint64_t, std::uint32_t> registered_index_;
  std::unordered_map<std::uint64_t, open_range> open_;
  std::unordered_map<std::uint64_t, device_ref> open_device_;  // range id → device event of its begin
  const device_times* device_;
  std::vector<pending_end> ends_;
  bool begins_may_be_gone_ = false;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
