// Turns the raw records of buffer segments into trace_data: validates each
// record, resolves strings, and pairs range begins with their ends by id.
//
// Two passes. The first reads every segment for the ranges begun with an id
// (their ends may be on any thread, in any order); the second decodes, one
// thread at a time if the caller wishes, and gives each range its end as it
// meets its begin. What the first pass keeps grows with the ranges that have
// ids, not with the trace.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "../trace_data.hpp"
#include "../marker/chunk.hpp"
#include "../marker/device_hook.hpp"
#include "device_times.hpp"
#include "../marker/platform.hpp"
#include "../marker/record.hpp"
#include "record_visitor.hpp"
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
  bool owned;                     // taken from the full queue: recycle after decoding
  std::int64_t drained_ns = 0;    // steady ns when it was taken: its records are older
  const chunk* origin = nullptr;  // the chunk the records were in (also for copies)
};

class decoder {
 public:
  decoder(trace_data& out, std::uint64_t start_ticks, const device_times* device = nullptr)
      : out_(out), start_ticks_(start_ticks), device_(device) {
    if (out_.strings.empty()) out_.strings.emplace_back();  // index 0: ""
    string_index_.emplace("", 0);
  }

  /// First pass, over every segment before any add(): where each range with
  /// an id ends (the first end in time wins: ends of one range may come from
  /// several threads, and buffers are read thread by thread), and which
  /// ranges began.
  /// `also(p)` is called on each record, for a caller that wants to look
  /// at them in the same pass.
  template <class Also>
  void index(const segment& s, Also&& also) {
    for_each_record(s, [&](const std::uint64_t* p) NPUPROF_INLINE_LAMBDA {
      also(p);
      const kind k = tag_kind(p[word::tag]);
      if (k == kind::begin_ref || k == kind::begin_copy) {
        ++ranges_[p[word::range_id]].begins;
        threads_with_ids_.insert(s.tid);
      } else if (k == kind::end) {
        range_ends& r = ranges_[p[word::range_id]];
        if (r.ends++ != 0) {
          ++out_.counts.repeated_range_ends;
          if (r.ticks <= p[word::ticks]) return;
        }
        const std::uint64_t tag = p[word::tag];
        r.ticks = p[word::ticks];
        r.tid = s.tid;
        r.domain = tag_domain(tag);
        r.stream = tag_has_stream(tag) ? stream_word(p) : 0;
        r.device_seq = tag_has_device(tag) ? device_word(p, 0) : no_device_event;
      }
    });
  }
  void index(const segment& s) {
    index(s, [](const std::uint64_t*) {});
  }

  /// Between the passes. Ranges left without an end are drawn up to
  /// `end_ticks`; unless ends were dropped (`ends_dropped`): then a range
  /// without an end may have lost it, and is not drawn as if it lasted. A
  /// flight recorder lets old records go (`begins_may_be_gone`): an end
  /// whose begin is gone began before the window.
  void prepare(std::uint64_t end_ticks, bool ends_dropped, bool begins_may_be_gone) {
    end_ticks_ = end_ticks;
    ends_dropped_ = ends_dropped;
    begins_may_be_gone_ = begins_may_be_gone;
    for (auto& [id, r] : ranges_) {
      if (r.ends == 0 || r.begins != 0) continue;
      orphans_[r.tid].push_back(id);
      threads_with_ids_.insert(r.tid);
    }
  }

  /// Whether thread `tid` has ranges begun with an id, or ended such a range
  /// whose begin is not in the data: its slices may not nest, and are best
  /// looked at together.
  bool has_ranges_with_ids(std::uint32_t tid) const { return threads_with_ids_.count(tid) != 0; }

  /// Second pass: decodes the records of `s` into the events of the data.
  void add(const segment& s) {
    count(s);
    if (!for_each_record(s, [&](const std::uint64_t* p) { decode_one(p, s.tid); })) ++out_.counts.corrupt_records;
  }

  /// Second pass, record by record, for a caller that decides their order:
  /// count(s) once for each segment, then add_record() for its records, as
  /// for_each_record() gives them.
  void count(const segment& s) {
    out_.counts.buffer_bytes += static_cast<std::uint64_t>(s.to - s.from) * sizeof(std::uint64_t);
  }
  void add_record(const std::uint64_t* p, std::uint32_t tid) { decode_one(p, tid); }
  void corrupt_segment() { ++out_.counts.corrupt_records; }

  /// Calls `f` on each record of `s` stamped since the start; false when a
  /// record was not valid (the rest of the segment is left out).
  template <class F>
  bool for_each_record(const segment& s, F&& f) const {
    const std::uint64_t* p = s.from;
    while (p < s.to) {
      const std::size_t n = record_words(p, s.to);
      if (n == 0) return false;
      if (p[word::ticks] >= start_ticks_) f(p);  // older records belong to no session
      p += n;
    }
    return true;
  }

  /// Where the event of record `p` goes in start order: its start, then
  /// minus its duration (longer first on ties). In counter ticks, which
  /// order events as their nanoseconds do.
  static std::pair<std::uint64_t, std::int64_t> order_key(const std::uint64_t* p) noexcept {
    if (tag_kind(p[word::tag]) != kind::complete) return {p[word::ticks], 0};
    return {p[word::ticks], -static_cast<std::int64_t>(p[word::end_ticks] - p[word::ticks])};
  }

  /// The ends thread `tid` recorded whose begins are not in the data: a
  /// caller's unknown id, or, in a flight recorder, a range that began
  /// before what was kept (drawn from the start of the data).
  void add_orphans(std::uint32_t tid) {
    auto it = orphans_.find(tid);
    if (it == orphans_.end()) return;
    for (std::uint64_t id : it->second) orphan_end(id, ranges_[id]);
    orphans_.erase(it);
  }

 private:
  struct range_ends {
    std::uint64_t ticks = 0;  // of the first end in time
    std::uint64_t stream = 0;
    std::uint64_t device_seq = no_device_event;
    std::uint32_t tid = 0;
    std::uint32_t domain = 0;  // of the first end in time: a range whose begin is gone is drawn there
    std::uint32_t ends = 0;
    std::uint32_t begins = 0;
    bool used = false;  // given to a begin
  };

  void orphan_end(std::uint64_t id, const range_ends& r) {
    const bool issued_id = (id >> 40) != 0;  // range ids carry their thread buffer's number up there
    if (!begins_may_be_gone_ || !issued_id) {
      ++out_.counts.unmatched_range_ends;
      return;
    }
    trace_event& ev = out_.events.emplace_back();
    ev.what = trace_event::type::slice;
    ev.began_before_window = true;
    ev.id_matched = true;
    ev.domain = static_cast<std::uint16_t>(r.domain < out_.domains.size() ? r.domain : 0);
    ev.name = intern("(began before the window)");
    ev.tid = ev.end_tid = r.tid;
    ev.ts = std::min(out_.start_ns, out_.clock.to_ns(r.ticks));  // filter_window() draws it from the window
    ev.dur = out_.clock.to_ns(r.ticks) - ev.ts;
  }

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
    if (begin != no_device_event && end == no_device_event) ++out_.counts.device_unpaired;  // ended on no stream
    const bool have_b = device_time(stream, begin, b);
    const bool have_e = device_time(end_stream, end, e);
    if (!have_b || !have_e) return;
    out_.device_events.push_back({host, stream, b, e > b ? e - b : 0, false});
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
    if (id == last_registered_id_ && last_registered_index_ != 0) return last_registered_index_;
    return registered_again(id);
  }

  // As registered(), for a string other than the last one.
  NPUPROF_COLD std::uint32_t registered_again(std::uint64_t id) {
    auto it = registered_index_.find(id);
    std::uint32_t index = 0;
    if (it != registered_index_.end()) {
      index = it->second;
    } else {
      index = intern(state().strings.lookup(id));
      registered_index_.emplace(id, index);
    }
    last_registered_id_ = id;
    last_registered_index_ = index;
    return index;
  }

  trace_event& push(trace_event::type t, const std::uint64_t* p, std::uint32_t tid) {
    trace_event& e = out_.events.emplace_back();
    e.what = t;
    e.domain = static_cast<std::uint16_t>(tag_domain(p[word::tag]));
    e.tid = e.end_tid = tid;
    e.ts = out_.clock.to_ns(p[word::ticks]);
    if (tag_has_stream(p[word::tag])) e.stream = stream_word(p);
    return e;
  }

  // A range begun with an id: its end, found by the first pass, or none.
  void end_range(trace_event& e, std::uint64_t id, bool device, std::uint64_t stream, std::uint64_t seq) {
    auto it = ranges_.find(id);
    if (it != ranges_.end() && it->second.ends != 0 && !it->second.used) {
      range_ends& r = it->second;
      r.used = true;
      e.dur = std::max<std::int64_t>(0, out_.clock.to_ns(r.ticks) - e.ts);
      e.end_tid = r.tid;
      if (device) add_device_slice(out_.events.size() - 1, stream, seq, r.stream, r.device_seq);
      return;
    }
    e.incomplete = true;
    if (device && seq != no_device_event) ++out_.counts.device_unpaired;  // no end: its device begin is not drawn
    if (ends_dropped_) {
      e.dur = 0;  // its end may be among the dropped: how long it lasted is unknown
      ++out_.counts.ranges_without_end;
    } else {
      e.dur = std::max<std::int64_t>(0, out_.clock.to_ns(end_ticks_) - e.ts);
      ++out_.counts.open_ranges;
    }
  }

  // A range that began and ended in one scope: one record at its end.
  trace_event& complete_range(const std::uint64_t* p, std::uint32_t tid) {
    trace_event& e = push(trace_event::type::slice, p, tid);
    e.name = registered(tag_payload(p[word::tag]));
    e.dur = std::max<std::int64_t>(0, out_.clock.to_ns(p[word::end_ticks]) - e.ts);
    return e;
  }

  void decode_one(const std::uint64_t* p, std::uint32_t tid) {
    const std::uint64_t tag = p[word::tag];
    if (tag_kind(tag) == kind::complete && !tag_has_device(tag)) {  // most records
      complete_range(p, tid);
      return;
    }
    decode_other(p, tid);
  }

  NPUPROF_COLD void decode_other(const std::uint64_t* p, std::uint32_t tid) {
    record_reader reader{*this, tid};
    visit_record(p, reader);
  }

  // What the second pass makes of each kind of record of thread `tid`.
  struct record_reader {
    decoder& d;
    std::uint32_t tid;

    void complete(const record_view& r) {
      d.complete_range(r.words(), tid);
      if (r.has_device()) {
        d.add_device_slice(d.out_.events.size() - 1, r.stream(), r.device_seq(0), r.stream(), r.device_seq(1));
      }
    }
    void begin(const record_view& r) {
      trace_event& e = d.push(trace_event::type::slice, r.words(), tid);
      e.name = d.name_of(r);
      e.id_matched = true;
      d.end_range(e, r.range_id(), r.has_device(), r.stream(), r.has_device() ? r.device_seq(0) : no_device_event);
    }
    void end(const record_view&) {}  // met by the first pass
    void mark(const record_view& r) {
      trace_event& e = d.push(trace_event::type::instant, r.words(), tid);
      e.name = d.name_of(r);
      std::int64_t at = 0;
      if (r.has_device() && d.device_time(r.stream(), r.device_seq(0), at)) {
        d.out_.device_events.push_back({d.out_.events.size() - 1, r.stream(), at, 0, true});
      }
    }
    void counter(const record_view& r) {
      trace_event& e = d.push(trace_event::type::counter, r.words(), tid);
      e.name = d.name_of(r);
      const counter_sample v = r.sample();
      e.value_is_double = v.is_double;
      if (v.is_double) {
        e.value.f64 = v.f64;
      } else {
        e.value.i64 = v.i64;
      }
    }
  };

  std::uint32_t name_of(const record_view& r) {
    return r.registered() ? registered(r.name_id()) : intern(r.name_text());
  }

  trace_data& out_;
  std::uint64_t start_ticks_;
  std::uint64_t end_ticks_ = 0;
  bool ends_dropped_ = false;
  bool begins_may_be_gone_ = false;
  std::unordered_map<std::string, std::uint32_t> string_index_;
  std::unordered_map<std::uint64_t, std::uint32_t> registered_index_;
  std::uint64_t last_registered_id_ = 0;
  std::uint32_t last_registered_index_ = 0;
  std::unordered_map<std::uint64_t, range_ends> ranges_;  // by range id
  std::unordered_set<std::uint32_t> threads_with_ids_;
  std::unordered_map<std::uint32_t, std::vector<std::uint64_t>> orphans_;  // by the thread that ended them
  const device_times* device_;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
