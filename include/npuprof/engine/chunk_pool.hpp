// Where chunks come from and go back to. Recording threads only pop free
// chunks and push full ones (both lock-free, never allocating), except for a
// thread's first chunk, made when none is free; the session's drainer
// prepares chunks, recycles them and enforces the memory cap.
//
// Two kinds of free chunk: written ones (the ready reserve, its pages
// already touched, what threads take first) and unwritten ones (address
// space for the rest of the cap, which costs no memory until a thread
// writes it). A burst that empties the reserve between two checks of the
// drainer goes on into unwritten chunks, paying their page faults instead of
// dropping events; only the cap drops.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

#include <boost/lockfree/queue.hpp>
#include <boost/lockfree/stack.hpp>

#include "../marker/chunk.hpp"
#include "chunk_arena.hpp"
#include "../marker/chunk_source.hpp"
#include "../marker/marker_state.hpp"
#include "../marker/platform.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

class chunk_pool final : public chunk_source {
 public:
  chunk_pool() : free_(64), unwritten_(64), full_(64), nodes_(64) {}

  // --- recording threads ---------------------------------------------------

  chunk* take_free() noexcept override {
    chunk* c = nullptr;
    if (free_.pop(c)) {
      free_count_.fetch_sub(1, std::memory_order_relaxed);
      return c;
    }
    ran_dry_.store(true, std::memory_order_relaxed);
    slot s;
    if (!unwritten_.pop(s)) return nullptr;
    unwritten_count_.fetch_sub(1, std::memory_order_relaxed);
    return chunk::create_in(s.mem, s.bytes);
  }

  /// Hands a chunk over to the drainer. Cannot fail for want of space: the
  /// queue has a node reserved for every chunk in existence.
  void hand_full(chunk* c) noexcept override { full_.bounded_push(c); }

  /// For fork(): held across it so that the child finds it unlocked.
  std::mutex& fork_lock() const noexcept { return mutex_; }

  // --- the drainer (callers serialise these) -------------------------------

  chunk* take_full() noexcept {
    chunk* c = nullptr;
    return full_.pop(c) ? c : nullptr;
  }

  /// Sets the chunk size and the cap on all chunk memory for the next session.
  /// A thread's current chunk keeps its size until it is full.
  void configure(std::size_t chunk_bytes, std::size_t cap_bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    chunk_bytes_ = chunk_bytes;
    cap_bytes_ = cap_bytes;
    // Keep up to 4 MiB (a quarter of the cap at most) ready for threads to
    // take between two checks of the drainer.
    const std::size_t cap_chunks = cap_bytes / chunk_bytes;
    reserve_ = std::clamp<std::size_t>(cap_chunks / 4, 2, std::max<std::size_t>(2, (4u << 20) / chunk_bytes));
    // Bursts grow it (see top_up), to a quarter of the cap at most: memory
    // held ready is memory the program cannot use, and the rest of the cap
    // is for the chunks threads write and the session holds.
    max_reserve_ = std::max<std::size_t>(reserve_, cap_chunks / 4);
    // Free chunks of another size or above the new cap go now; chunks in use
    // go when they come back. Unwritten ones all go back to the arena:
    // top_up() takes what the new cap allows.
    const std::size_t n = free_count_.load(std::memory_order_relaxed);  // recycling may push some back
    chunk* c = nullptr;
    for (std::size_t i = 0; i < n && free_.pop(c); ++i) {
      free_count_.fetch_sub(1, std::memory_order_relaxed);
      recycle_locked(c);
    }
    for (slot s; unwritten_.pop(s);) {
      unwritten_count_.fetch_sub(1, std::memory_order_relaxed);
      release_locked(s.mem, s.bytes, false);
    }
    ran_dry_.store(false, std::memory_order_relaxed);
  }

  /// Whether the reserve is below half of its size or ran dry since the last
  /// top_up: two relaxed loads, for the drainer's frequent checks.
  bool low() const noexcept {
    return ran_dry_.load(std::memory_order_relaxed) ||
           free_count_.load(std::memory_order_relaxed) < reserve_target_.load(std::memory_order_relaxed) / 2;
  }

  /// Writes free chunks until the reserve is full, then maps unwritten ones
  /// up to the cap. A reserve that ran dry, or that threads took more than
  /// half of, since the last call is doubled: threads that record fast get
  /// more written room between two checks.
  void top_up() {
    std::size_t reserve = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      const std::size_t left = free_count_.load(std::memory_order_relaxed);
      if (ran_dry_.exchange(false, std::memory_order_relaxed) || left < reserve_ / 2) {
        reserve_ = std::min(reserve_ * 2, max_reserve_);
      }
      reserve_target_.store(reserve_, std::memory_order_relaxed);
      reserve = reserve_;
    }
    while (free_count_.load(std::memory_order_relaxed) < reserve) {
      chunk* c = make_written();
      if (c == nullptr) break;
      give_free(c);
    }
    while (unwritten_count_.load(std::memory_order_relaxed) < max_unwritten) {
      const slot s = new_slot();
      if (s.mem == nullptr) break;
      unwritten_.bounded_push(s);
      unwritten_count_.fetch_add(1, std::memory_order_relaxed);
    }
  }

  /// A chunk for a thread recording its first event: a free one, else a new
  /// one while the cap allows. Registering a thread may allocate (it does
  /// already); recording afterwards never does.
  chunk* take_for_new_thread() noexcept override {
    if (chunk* c = take_free()) return c;
    try {
      const slot s = new_slot();
      return s.mem == nullptr ? nullptr : chunk::create_in(s.mem, s.bytes);
    } catch (...) {
      return nullptr;  // out of memory: the event is dropped and counted
    }
  }

  /// Bytes of all chunks of the configured size, wherever they are: what the
  /// cap bounds.
  std::size_t bytes_allocated() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return current_bytes_locked();
  }

  /// Takes back a chunk the session no longer needs.
  void recycle(chunk* c) {
    std::lock_guard<std::mutex> lock(mutex_);
    recycle_locked(c);
  }

  /// Lets a stopped session keep a chunk's records: the chunk no longer
  /// counts against the cap (a new session may take its place) and comes
  /// back through release_detached() when they are no longer needed.
  void detach(chunk* c) {
    std::lock_guard<std::mutex> lock(mutex_);
    --count_by_size_[c->bytes];
    --allocated_;
  }

  /// Gives a detached chunk's pages back to the system.
  void release_detached(chunk* c) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t bytes = c->bytes;
    c->~chunk();
    arena_.give_back(c, bytes, true);
  }

 private:
  // A slot of address space for one chunk of the configured size; none at
  // the cap.
  struct slot {
    void* mem = nullptr;
    std::size_t bytes = 0;
  };

  slot new_slot() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (current_bytes_locked() + chunk_bytes_ > cap_bytes_) return {};
    reserve_nodes_locked(allocated_ + 1);
    void* mem = arena_.take(chunk_bytes_);
    if (mem == nullptr) return {};
    ++allocated_;
    ++count_by_size_[chunk_bytes_];
    return {mem, chunk_bytes_};
  }

  // A free chunk with its pages touched, so that recording threads never
  // take the page faults of fresh memory: an unwritten one, or a new one
  // while the cap allows. Written outside the lock, so that threads taking
  // their first chunk do not wait behind a top-up.
  chunk* make_written() {
    slot s;
    if (unwritten_.pop(s)) {
      unwritten_count_.fetch_sub(1, std::memory_order_relaxed);
    } else {
      s = new_slot();
      if (s.mem == nullptr) return nullptr;
    }
    chunk* c = chunk::create_in(s.mem, s.bytes);
    std::memset(c->data(), 0, static_cast<std::size_t>(c->limit - c->data()) * sizeof(std::uint64_t));
    return c;
  }

  void give_free(chunk* c) {
    c->reset(0);
    free_.bounded_push(c);
    free_count_.fetch_add(1, std::memory_order_relaxed);
  }

  void recycle_locked(chunk* c) {
    if (c->bytes != chunk_bytes_ || current_bytes_locked() > cap_bytes_) {
      c->~chunk();
      release_locked(c, c->bytes, true);
      return;
    }
    give_free(c);
  }

  // Gives a slot's pages back to the system (if it was written) and its
  // address to the arena; it no longer counts.
  void release_locked(void* mem, std::size_t bytes, bool written) {
    arena_.give_back(mem, bytes, written);
    --count_by_size_[bytes];
    --allocated_;
  }

  // The cap applies to chunks of the configured size; chunks of an earlier
  // size are freed as they come back and do not count.
  std::size_t current_bytes_locked() const {
    auto it = count_by_size_.find(chunk_bytes_);
    return it == count_by_size_.end() ? 0 : it->second * chunk_bytes_;
  }

  // Every lock-free container may hold every chunk at once: give them a
  // node each beforehand so that pushes never allocate.
  void reserve_nodes_locked(std::size_t chunks) {
    if (chunks <= nodes_) return;
    const std::size_t more = std::max(chunks - nodes_, nodes_ / 2);  // fewer, larger steps
    free_.reserve(more);
    unwritten_.reserve(more);
    full_.reserve(more);
    nodes_ += more;
  }

  // Unwritten chunks mapped ahead, at most: each takes a node in the
  // containers above (the default cap is 16,384 chunks of 16 KiB).
  static constexpr std::size_t max_unwritten = 16384;

  boost::lockfree::stack<chunk*> free_;
  boost::lockfree::stack<slot> unwritten_;
  boost::lockfree::queue<chunk*> full_;
  std::atomic<std::size_t> free_count_{0};
  std::atomic<std::size_t> unwritten_count_{0};
  std::atomic<bool> ran_dry_{false};

  mutable std::mutex mutex_;
  std::size_t nodes_;
  std::size_t chunk_bytes_ = 64 * 1024;
  std::size_t cap_bytes_ = 0;
  std::size_t reserve_ = 2;
  std::atomic<std::size_t> reserve_target_{2};  // reserve_, for low() without the lock
  std::size_t max_reserve_ = 2;
  std::size_t allocated_ = 0;  // chunks in existence, wherever they are
  std::map<std::size_t, std::size_t> count_by_size_;
  chunk_arena arena_;
};

/// The process's chunk pool, made with the first session and installed in
/// the process state, where recording threads reach it. Never destroyed, as
/// that state is not.
NPUPROF_PROCESS_WIDE inline chunk_pool& pool() {
  static chunk_pool* const p = [] {
    auto* made = new chunk_pool();
    markers().chunks.store(made, std::memory_order_release);
    return made;
  }();
  return *p;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
