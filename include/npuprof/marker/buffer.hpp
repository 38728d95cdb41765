// What a thread does when the chunk it writes to has no room: its first
// event (registering it), a full chunk handed over for a free one, or a drop
// that is counted. The fast path that ends here is in detail/writer.hpp.
// None of this locks, allocates or blocks once the thread is registered.
#pragma once

#include "abi.hpp"

#include <pthread.h>

#include <cstddef>
#include <cstdint>

#include "chunk_source.hpp"
#include "marker_state.hpp"
#include "platform.hpp"
#include "record.hpp"
#include "thread_buffer.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Words at the end of every chunk that only range ends may use: a range
/// whose begin was recorded finds room for its end even when no free chunk is
/// left (32 host-only ends, or nested ranges as deep, per chunk).
inline constexpr std::size_t end_reserve_words = 96;

/// Where records other than ends stop in chunk `c`.
inline std::uint64_t* limit_for_records(chunk* c) noexcept {
  const auto words = static_cast<std::size_t>(c->limit - c->data());
  return c->limit - (words / 8 < end_reserve_words ? words / 8 : end_reserve_words);
}

/// Makes `c` the thread's current chunk.
inline void install_chunk(thread_buffer* tb, chunk* c) noexcept {
  c->reset(tb->tid);
  tb->write = c->data();
  tb->limit = limit_for_records(c);
  tb->current.store(c, std::memory_order_release);
}

/// Takes the thread's current chunk off its buffer and queues it for the
/// drainer (a full one, or an exiting thread's last). In between it is in
/// neither place a reader looks: the flag says so, and a reader that finds
/// no current chunk waits for it to clear, by when the chunk is queued.
inline void hand_over_current(thread_buffer* tb, chunk_source& pool) noexcept {
  tb->handing_over.store(true, std::memory_order_relaxed);
  if (chunk* c = tb->current.exchange(nullptr, std::memory_order_acq_rel)) pool.hand_full(c);
  tb->handing_over.store(false, std::memory_order_release);
}

/// The calling thread's buffer, registering the thread when it has none;
/// null when it cannot be registered (or no control table is installed, so
/// no session can be running). Out of line: a thread's first event only.
NPUPROF_COLD inline thread_buffer* register_this_thread() noexcept {
  if (thread_buffer* tb = t_buffer) return tb;
  const control_table* c = control();
  return c != nullptr ? c->register_thread() : nullptr;
}

/// Finds room for `words` words when the current chunk has none: hands the
/// full chunk over and takes a free one, or drops the event and counts it.
/// A range end (`for_end`) that finds no free chunk goes into the room kept
/// for ends at the end of the current chunk.
NPUPROF_COLD inline std::uint64_t* reserve_slow(std::size_t words, bool for_end = false) noexcept {
  thread_buffer* tb = register_this_thread();
  marker_state& s = markers();
  if (tb == nullptr) {
    s.stats.bump(s.stats.unregistered_drops);
    return nullptr;
  }
  if (tb->write != nullptr && static_cast<std::size_t>(tb->limit - tb->write) >= words) return tb->write;
  chunk* full = tb->current.load(std::memory_order_relaxed);
  if (for_end && full != nullptr && static_cast<std::size_t>(full->limit - tb->write) >= words) {
    // From here on the chunk is full for every other record.
    tb->limit = tb->write + words;
    return tb->write;
  }
  // A thread's first chunk is made for it when the reserve is empty, so
  // that many threads starting at once (a burst of requests) drop nothing;
  // a thread's first event may allocate, as registering it does.
  chunk_source* pool = s.chunks.load(std::memory_order_acquire);
  chunk* fresh = pool == nullptr ? nullptr : full != nullptr ? pool->take_free() : pool->take_for_new_thread();
  if (fresh == nullptr) {
    // The full chunk stays current, so that its room for ends stays usable.
    tb->dropped.fetch_add(1, std::memory_order_relaxed);
    if (for_end) s.stats.bump(s.stats.dropped_range_ends);
    return nullptr;
  }
  if (full != nullptr) hand_over_current(tb, *pool);
  install_chunk(tb, fresh);
  return tb->write;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
