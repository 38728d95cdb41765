// The write path: how a marker puts a record into its thread's buffer.
//
// Fast path: a thread-local load, a bounds check, plain stores and one release
// store that publishes the record. Everything else (first event of a thread,
// a full chunk, no free chunk) is in the out-of-line slow path, which still
// never locks, allocates or blocks once the thread is registered.
#pragma once

#include "detail/abi.hpp"

#include <pthread.h>

#include <cstddef>
#include <cstdint>

#include "detail/marker_state.hpp"
#include "detail/platform.hpp"
#include "detail/record.hpp"
#include "detail/thread_buffer.hpp"

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

/// The calling thread's buffer, registering the thread on its first event;
/// null when it cannot be registered (or no control table is installed, so
/// no session can be running).
inline thread_buffer* this_thread_buffer() noexcept {
  thread_buffer* tb = t_buffer;
  if (NPUPROF_LIKELY(tb != nullptr)) return tb;
  const control_table* c = control();
  return c != nullptr ? c->register_thread() : nullptr;
}

/// Finds room for `words` words when the current chunk has none: hands the
/// full chunk over and takes a free one, or drops the event and counts it.
/// A range end (`for_end`) that finds no free chunk goes into the room kept
/// for ends at the end of the current chunk.
NPUPROF_COLD inline std::uint64_t* reserve_slow(std::size_t words, bool for_end = false) noexcept {
  thread_buffer* tb = this_thread_buffer();
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
  if (full != nullptr) {
    tb->current.store(nullptr, std::memory_order_release);
    pool->hand_full(full);
  }
  install_chunk(tb, fresh);
  return tb->write;
}

/// Room for `words` words in this thread's buffer, or null when the event has
/// to be dropped (it is then already counted).
NPUPROF_ALWAYS_INLINE std::uint64_t* reserve(std::size_t words) noexcept {
  thread_buffer* tb = t_buffer;
  if (NPUPROF_LIKELY(tb != nullptr)) {
    std::uint64_t* p = tb->write;
    if (NPUPROF_LIKELY(static_cast<std::size_t>(tb->limit - p) >= words)) return p;
  }
  return reserve_slow(words);
}

/// Room for a range end: as reserve(), and when no chunk is free, the room
/// kept for ends at the end of the current chunk.
NPUPROF_ALWAYS_INLINE std::uint64_t* reserve_end(std::size_t words) noexcept {
  thread_buffer* tb = t_buffer;
  if (NPUPROF_LIKELY(tb != nullptr)) {
    std::uint64_t* p = tb->write;
    if (NPUPROF_LIKELY(static_cast<std::size_t>(tb->limit - p) >= words)) return p;
  }
  return reserve_slow(words, true);
}

/// Publishes everything written before `end` to the drainer.
NPUPROF_ALWAYS_INLINE void commit(std::uint64_t* end) noexcept {
  thread_buffer* tb = t_buffer;
  tb->write = end;
  tb->current.load(std::memory_order_relaxed)->published.store(end, std::memory_order_release);
}

/// A new range id: unique in the process, never 0, no shared counter.
inline std::uint64_t next_range_id() noexcept {
  thread_buffer* tb = this_thread_buffer();
  if (tb == nullptr) return 0;
  return tb->id_base | (++tb->id_seq & ((std::uint64_t{1} << 40) - 1));
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
