// What a stop(), a schedule cycle or a dump takes from the buffers, before
// it is decoded: the raw records, and what the trace says about itself. It
// is decoded thread by thread, in windows of a bounded number of events, so
// that writing a trace takes memory for a window, not for the whole trace.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <utility>
#include <map>
#include <string>
#include <vector>

#include "../trace_data.hpp"
#include "decode.hpp"
#include "device_times.hpp"
#include "chunk_pool.hpp"
#include "event_filter.hpp"
#include "huge_pages.hpp"
#include "../marker/platform.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

struct collected {
  collected() = default;
  collected(const collected&) = delete;
  collected& operator=(const collected&) = delete;
  ~collected() {
    for (chunk* c : detached) {
      try {
        pool().release_detached(c);
      } catch (...) {
        // Out of memory for the arena's list: the slot stays unused.
      }
    }
  }

  std::vector<segment> segments;                   // in the order they were taken
  std::vector<chunk*> detached;                    // chunks whose records segments point into
  std::deque<std::vector<std::uint64_t>> storage;  // records copied out of chunks given back
  /// Everything but the events, the device events and the strings; counts
  /// taken when the records were.
  trace_data header;
  std::string trace_id;          // of the session that recorded them
  nlohmann::json user_metadata;  // as it was when they were taken
  device_times device;
  bool has_device = false;
  std::uint64_t stale_before = 0;   // records stamped before it belong to no trace
  std::uint64_t end_ticks = 0;      // ranges still open are drawn up to here
  bool begins_may_be_gone = false;  // a flight recorder let old records go
  bool window = false;              // a flight recorder shows its window only
  std::int64_t window_from_ns = 0;
  std::int64_t complete_from_ns = 0;  // records before it may have been let go for the memory cap
  std::int64_t min_duration_ns = 0;

  /// Keeps the records of a chunk the pool no longer counts (see
  /// chunk_pool::detach), where they are.
  void keep(const segment& s) {
    detached.push_back(s.source);
    segments.push_back(s);
  }

  /// Keeps a copy of records that live elsewhere.
  /// Copies go one after another into large blocks: small arrays, one per
  /// chunk, would cost a page fault for every few kilobytes.
  void copy(const segment& s) {
    const auto n = static_cast<std::size_t>(s.to - s.from);
    if (storage.empty() || storage.back().capacity() - storage.back().size() < n) {
      // Blocks double from small to large: a few copies take little room.
      const std::size_t last = storage.empty() ? 0 : storage.back().capacity();
      reserve_huge(storage.emplace_back(), std::max(n, std::clamp(2 * last, first_block_words, block_words)));
    }
    std::vector<std::uint64_t>& block = storage.back();
    const std::size_t at = block.size();
    block.insert(block.end(), s.from, s.to);  // within its capacity: earlier copies stay where they are
    segments.push_back({nullptr, block.data() + at, block.data() + at + n, s.tid, false, s.drained_ns, s.origin});
  }

 private:
  static constexpr std::size_t first_block_words = (std::size_t{64} << 10) / sizeof(std::uint64_t);
  static constexpr std::size_t block_words = (std::size_t{8} << 20) / sizeof(std::uint64_t);
};

/// Events of one window a filter leaves out: a flight recorder's window,
/// then the duration threshold. Counted in `d`.
inline void filter_window(const collected& c, trace_data& d) {
  if (c.window) {
    d.counts.outside_window += keep_window(d, c.window_from_ns);
    // A range whose begin was let go is drawn from where the window is
    // complete (its start, unless the memory cap let go of more), and
    // counted once it is known to be in the window.
    const std::int64_t from = std::max(c.window_from_ns, c.complete_from_ns);
    for (trace_event& e : d.events) {
      if (!e.began_before_window) continue;
      ++d.counts.began_before_window;
      const std::int64_t end = e.ts + e.dur;
      e.ts = std::min(from, end);
      e.dur = end - e.ts;
    }
  }
  d.counts.short_ranges += keep_long_ranges(d, c.min_duration_ns);
}

/// Where a record's event goes in start order: decoder::order_key.
using order_key_type = std::pair<std::uint64_t, std::int64_t>;

/// A record whose event starts before one read earlier on its thread: a
/// scoped range is written when it ends, after the ranges it holds. Only
/// the record's address is kept: its key is read from it when sorting.
struct late_record {
  const std::uint64_t* record;
  bool operator<(const late_record& o) const { return decoder::order_key(record) < decoder::order_key(o.record); }
};

/// The records of one thread, and those of them that came late.
struct thread_records {
  std::vector<const segment*> segments;
  std::deque<late_record> late;                                      // in blocks: growing never copies it
  order_key_type last{0, std::numeric_limits<std::int64_t>::min()};  // of the last record in order

  /// Whether `p` comes in start order; else it is kept in `late`.
  NPUPROF_ALWAYS_INLINE bool in_order(const std::uint64_t* p, bool keep) {
    const order_key_type k = decoder::order_key(p);
    if (k < last) {
      if (keep) late.push_back({p});
      return false;
    }
    last = k;
    return true;
  }
};

/// Decodes the records of one thread, whose slices nest by construction, in
/// start order (longer first on ties), in windows of `window_events`. Most
/// records come in that order; the few that do not (ranges that held
/// others) were found by the first pass and are merged in: only they are
/// kept aside.
template <class HandOver>
void decode_in_order(decoder& dec, thread_records& t, trace_data& out, std::size_t window_events,
                     HandOver&& hand_over) {
  std::sort(t.late.begin(), t.late.end());
  std::size_t next = 0;
  const std::size_t late = t.late.size();
  t.last = thread_records{}.last;
  const std::uint32_t tid = t.segments.front()->tid;
  for (const segment* s : t.segments) {
    dec.count(*s);
    const bool valid = dec.for_each_record(*s, [&](const std::uint64_t* p) NPUPROF_INLINE_LAMBDA {
      if (!t.in_order(p, false)) return;  // late: merged in at its place
      const order_key_type k = t.last;
      for (; next < late && decoder::order_key(t.late[next].record) < k; ++next) {
        dec.add_record(t.late[next].record, tid);
        if (out.events.size() >= window_events) hand_over();
      }
      dec.add_record(p, tid);
      if (out.events.size() >= window_events) hand_over();
    });
    if (!valid) dec.corrupt_segment();
  }
  for (; next < t.late.size(); ++next) {
    dec.add_record(t.late[next].record, tid);
    if (out.events.size() >= window_events) hand_over();
  }
  hand_over();
}

/// Decodes `c` into `out` (a copy of c.header) thread by thread, threads by
/// id. After each window of about `window_events` events, and at the end of
/// each thread, calls `visit(tid, whole)` with out.events and
/// out.device_events holding that window's events (device events point into
/// them), in start order unless `whole`. `whole`: they are all of the
/// thread's events, which a thread with ranges begun with an id always gets
/// in one window: its slices may not nest, and are looked at together.
/// `visit` takes the events away (clears them); strings and counts stay.
template <class Visit>
void decode_by_thread(const collected& c, trace_data& out, std::size_t window_events, Visit&& visit) {
  decoder dec(out, c.stale_before, c.has_device ? &c.device : nullptr);
  std::map<std::uint32_t, thread_records> threads;
  for (const segment& s : c.segments) {
    thread_records& t = threads[s.tid];
    t.segments.push_back(&s);
    dec.index(s, [&](const std::uint64_t* p) { t.in_order(p, true); });
  }
  dec.prepare(c.end_ticks, out.counts.dropped_range_ends != 0, c.begins_may_be_gone);
  for (auto& [tid, t] : threads) {
    if (dec.has_ranges_with_ids(tid)) {
      t.late = {};
      for (const segment* s : t.segments) dec.add(*s);
      dec.add_orphans(tid);
      filter_window(c, out);
      visit(tid, true);
    } else {
      const std::uint32_t thread = tid;
      decode_in_order(dec, t, out, window_events, [&] {
        filter_window(c, out);
        visit(thread, false);
      });
    }
  }
}

/// Decodes all of `c` at once: what session::data() shows.
inline trace_data decode_all(const collected& c) {
  trace_data out = c.header;
  trace_data all;
  decode_by_thread(c, out, ~std::size_t{0}, [&](std::uint32_t, bool) {
    const std::size_t base = all.events.size();
    all.events.insert(all.events.end(), out.events.begin(), out.events.end());
    for (device_event e : out.device_events) {
      e.host += base;
      all.device_events.push_back(e);
    }
    out.events.clear();
    out.device_events.clear();
  });
  out.events = std::move(all.events);
  out.device_events = std::move(all.device_events);
  return out;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
