// The records a session has taken from the buffers and holds until it writes
// them: full chunks it drained, copies of the few records of chunks given back
// early, and what live threads had published when it looked. A flight
// recorder lets go of the oldest to keep its window.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "../clock.hpp"
#include "../engine/chunk_pool.hpp"
#include "../engine/collected.hpp"
#include "../engine/decode.hpp"
#include "../marker/diagnostics.hpp"
#include "../metrics/live_metrics.hpp"
#include "../engine/state.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Memory a segment keeps: its whole chunk, or its copied records.
inline std::size_t segment_bytes(const segment& s) {
  return s.owned ? s.source->bytes : static_cast<std::size_t>(s.to - s.from) * sizeof(std::uint64_t);
}

/// What a flight recorder let go for its memory cap: how many bytes, and
/// until when records may be missing for it.
struct eviction {
  std::uint64_t bytes = 0;
  std::int64_t until_ns = 0;
};

/// Waits while thread `tb`, found with no current chunk, hands one over
/// (hand_over_current): once it is done the chunk is in the queue
/// drain_full() takes from.
/// The handover is a few instructions that never block; a thread stopped in
/// them (by a debugger) is waited for a second at most, and said.
inline void wait_for_handover(const thread_buffer& tb) {
  using namespace std::chrono_literals;
  const auto give_up = std::chrono::steady_clock::now() + 1s;
  for (int spins = 0; tb.handing_over.load(std::memory_order_acquire); ++spins) {
    if (spins < 64) {
      std::this_thread::yield();
    } else if (std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(50us);
    } else {
      say("thread %u stopped for over a second while handing a full chunk over: its records are missing here",
          static_cast<unsigned>(tb.tid));
      return;
    }
  }
}

/// Records taken from the buffers, oldest first. Not thread-safe: the
/// session calls it under its control lock.
class drained_records {
 public:
  /// Takes the full chunks threads handed over. A chunk that is mostly empty
  /// (its thread exited early) is copied and goes straight back to the
  /// pool, so that threads that come and go do not use up the free chunks.
  void drain_full() {
    chunk_pool& pool = detail::pool();
    const std::int64_t now = steady_ns();
    while (chunk* c = pool.take_full()) {
      std::uint64_t* end = c->published.load(std::memory_order_acquire);
      if (meter_ != nullptr) meter_->read(*c, end);
      const auto used = static_cast<std::size_t>(end - c->unread);
      if (used * 4 < static_cast<std::size_t>(c->limit - c->data()) && !read_in_place(c)) {
        const std::vector<std::uint64_t>& copy = copies_.emplace_back(c->unread, end);
        segments_.push_back({nullptr, copy.data(), copy.data() + copy.size(), c->tid, false, now, c});
        pool.recycle(c);
      } else {
        segments_.push_back({c, c->unread, end, c->tid, true, now, c});
        c->unread = end;
      }
      held_bytes_ += segment_bytes(segments_.back());
    }
  }

  /// Every published record: full chunks, what live threads' chunks hold so
  /// far (read in place until move_into()), then chunks handed over while we
  /// looked at those (a thread found handing one over is waited for). A
  /// chunk read in place is kept whole when it comes back: given back to the
  /// pool at once, another thread could write over the records the segment
  /// points to before they are copied.
  void take_published() {
    drain_full();
    const std::int64_t now = steady_ns();
    open_scoped_ = 0;
    state().threads.for_each_live([&](thread_buffer& tb) {
      // Read before the records: a range seen closed here has its record
      // published (scoped_ended), so each is either taken or counted.
      open_scoped_ += tb.open_scoped.load(std::memory_order_acquire);
      chunk* c = tb.current.load(std::memory_order_acquire);
      if (c == nullptr) return wait_for_handover(tb);
      std::uint64_t* end = c->published.load(std::memory_order_acquire);
      if (meter_ != nullptr) meter_->read(*c, end);
      if (end > c->unread) {
        segments_.push_back({c, c->unread, end, c->tid, false, now, c});
        held_bytes_ += segment_bytes(segments_.back());  // as drop_oldest() takes it off
        read_in_place_.push_back(c);
      }
      c->unread = end;
    });
    drain_full();
  }

  /// What a dump reads: every published record, left where it is. The
  /// segments held and full chunks; what live threads' chunks hold so far,
  /// copied (they go on writing them, and the next dump sees it again); then
  /// chunks handed over while we looked, taken whole instead of their copy.
  struct snapshot {
    std::vector<segment> segments;
    std::deque<std::vector<std::uint64_t>> copies;  // stable addresses for the segments
    std::uint64_t open_scoped = 0;                  // as open_scoped() says
  };
  snapshot copy_published() {
    snapshot out;
    drain_full();
    std::vector<segment> copied;
    state().threads.for_each_live([&](thread_buffer& tb) {
      out.open_scoped += tb.open_scoped.load(std::memory_order_acquire);  // before the records: see take_published()
      chunk* c = tb.current.load(std::memory_order_acquire);
      if (c == nullptr) return wait_for_handover(tb);
      std::uint64_t* published = c->published.load(std::memory_order_acquire);
      if (published <= c->unread) return;
      const std::vector<std::uint64_t>& copy = out.copies.emplace_back(c->unread, published);
      copied.push_back({nullptr, copy.data(), copy.data() + copy.size(), c->tid, false, 0, c});
    });
    const std::size_t before = segments_.size();
    drain_full();
    out.segments.assign(segments_.begin(), segments_.end());
    for (const segment& c : copied) {
      const bool drained = std::any_of(segments_.begin() + static_cast<std::ptrdiff_t>(before), segments_.end(),
                                       [&](const segment& s) { return s.origin == c.origin; });
      if (!drained) out.segments.push_back(c);
    }
    return out;
  }

  /// Flight recorder: lets go of what was drained before `oldest_ns`, then
  /// of the oldest until at most `keep_bytes` are held, so that recording
  /// threads always find free chunks. What a reader may still read is let
  /// go when the last reader is done.
  void trim(std::int64_t oldest_ns, std::size_t keep_bytes) {
    while (!segments_.empty() && segments_.front().drained_ns < oldest_ns) drop_oldest();
    while (!segments_.empty() && held_bytes_ > keep_bytes) {
      evicted_.bytes += segment_bytes(segments_.front());
      evicted_.until_ns = segments_.front().drained_ns;
      drop_oldest();
    }
  }

  /// Scoped ranges with a registered message that were open on live threads
  /// when the last take_published() took their records: their one record is
  /// not among those taken. A range ending at that moment may be counted and
  /// taken both; none is neither.
  std::uint64_t open_scoped() const noexcept { return open_scoped_; }

  /// Live metrics see every record taken from now on (null: none do).
  void meter_with(live_metrics* m) noexcept { meter_ = m; }

  /// Gives every segment back to the pool.
  void recycle_all() {
    for (const segment& s : segments_) {
      if (s.owned) pool().recycle(s.source);
    }
    segments_.clear();
    copies_.clear();
    read_in_place_.clear();
    held_bytes_ = 0;
  }

  /// Moves every segment into `c`: drained chunks stay where they are,
  /// detached from the pool (outside the memory cap); other records are
  /// copied.
  void move_into(collected& c) {
    c.detached.reserve(segments_.size());
    c.segments.reserve(segments_.size());
    for (const segment& s : segments_) {
      if (s.owned) {
        pool().detach(s.source);
        c.keep(s);
      } else {
        c.copy(s);
      }
    }
    segments_.clear();
    copies_.clear();
    read_in_place_.clear();
    held_bytes_ = 0;
  }

  /// A reader (a dump) reads segments() outside the lock from here until
  /// reading_ends(): trim() keeps what it lets go meanwhile.
  void reading_begins() noexcept { ++readers_; }
  void reading_ends() {
    if (--readers_ > 0) return;
    for (chunk* c : retired_chunks_) pool().recycle(c);
    retired_chunks_.clear();
    retired_copies_.clear();
  }

  const std::deque<segment>& segments() const noexcept { return segments_; }
  /// Flight recorder: what the memory cap let go so far.
  eviction evicted() const noexcept { return evicted_; }
  void reset_eviction() noexcept { evicted_ = {}; }

 private:
  bool read_in_place(const chunk* c) const {
    return std::find(read_in_place_.begin(), read_in_place_.end(), c) != read_in_place_.end();
  }

  void drop_oldest() {
    const segment& s = segments_.front();
    held_bytes_ -= segment_bytes(s);
    if (s.owned) {
      if (readers_ > 0) {
        retired_chunks_.push_back(s.source);
      } else {
        pool().recycle(s.source);
      }
    } else if (s.source == nullptr) {
      // Copies are made in the order of their segments. Moving one keeps
      // its records where a reader's segment points.
      if (readers_ > 0) retired_copies_.push_back(std::move(copies_.front()));
      copies_.pop_front();
    }
    segments_.pop_front();
  }

  std::deque<segment> segments_;
  std::deque<std::vector<std::uint64_t>> copies_;  // records of chunks given back early
  std::vector<const chunk*> read_in_place_;        // live chunks take_published() points into
  std::size_t held_bytes_ = 0;                     // memory segments_ keep from the pool
  std::uint64_t open_scoped_ = 0;                  // see open_scoped()
  eviction evicted_;
  live_metrics* meter_ = nullptr;
  int readers_ = 0;
  std::vector<chunk*> retired_chunks_;                     // let go while read
  std::deque<std::vector<std::uint64_t>> retired_copies_;  // ... and copies
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
