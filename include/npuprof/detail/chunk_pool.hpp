// Where chunks come from and go back to. Recording threads only pop free
// chunks and push full ones (both lock-free, never allocating), except for a
// thread's first chunk, made when none is free; the session's drainer
// allocates, recycles and enforces the memory cap.
#pragma once

#include "abi.hpp"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>

#include <boost/lockfree/queue.hpp>
#include <boost/lockfree/stack.hpp>

#include "chunk.hpp"
#include "chunk_source.hpp"
#include "marker_state.hpp"
#include "platform.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

class chunk_pool final : public chunk_source {
 public:
  chunk_pool() : free_(64), full_(64), nodes_(64) {}

  // --- recording threads ---------------------------------------------------

  chunk* take_free() noexcept override {
    chunk* c = nullptr;
    if (!free_.pop(c)) {
      ran_dry_.store(true, std::memory_order_relaxed);
      return nullptr;
    }
    free_count_.fetch_sub(1, std::memory_order_relaxed);
    return c;
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
    // go when they come back.
    const std::size_t n = free_count_.load(std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
      chunk* c = take_free();
      if (c == nullptr) break;
      recycle_locked(c);
    }
    ran_dry_.store(false, std::memory_order_relaxed);
  }

  /// Whether the reserve is below half of its size or ran dry since the last
  /// top_up: two relaxed loads, for the drainer's frequent checks.
  bool low() const noexcept {
    return ran_dry_.load(std::memory_order_relaxed) ||
           free_count_.load(std::memory_order_relaxed) < reserve_target_.load(std::memory_order_relaxed) / 2;
  }

  /// Allocates free chunks until the reserve is full or the cap is reached.
  /// A reserve that ran dry, or that threads took more than half of, since
  /// the last call is doubled: threads that record fast get more room between
  /// two checks.
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
      chunk* c = make();
      if (c == nullptr) return;
      give_free(c);
    }
  }

  /// A chunk for a thread recording its first event: a free one, else a new
  /// one while the cap allows. Registering a thread may allocate (it does
  /// already); recording afterwards never does.
  chunk* take_for_new_thread() noexcept override {
    if (chunk* c = take_free()) return c;
    try {
      return make();
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

 private:
  // A new chunk of the configured size, its pages touched, so that
  // recording threads never take the page faults of fresh memory; null at
  // the cap. Counted under the lock, allocated and touched outside it, so
  // that threads taking their first chunk do not wait behind a top-up.
  chunk* make() {
    std::size_t bytes = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (current_bytes_locked() + chunk_bytes_ > cap_bytes_) return nullptr;
      bytes = chunk_bytes_;
      ++allocated_;
      ++count_by_size_[bytes];
      reserve_nodes_locked();
    }
    chunk* c = chunk::create(bytes);
    if (c == nullptr) {
      std::lock_guard<std::mutex> lock(mutex_);
      --allocated_;
      --count_by_size_[bytes];
      return nullptr;
    }
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
      --count_by_size_[c->bytes];
      --allocated_;
      chunk::destroy(c);
      return;
    }
    give_free(c);
  }

  // The cap applies to chunks of the configured size; chunks of an earlier
  // size are freed as they come back and do not count.
  std::size_t current_bytes_locked() const {
    auto it = count_by_size_.find(chunk_bytes_);
    return it == count_by_size_.end() ? 0 : it->second * chunk_bytes_;
  }

  // Both lock-free containers may hold every chunk at once: give them a
  // node each beforehand so that pushes never allocate.
  void reserve_nodes_locked() {
    if (allocated_ <= nodes_) return;
    const std::size_t more = allocated_ - nodes_;
    free_.reserve(more);
    full_.reserve(more);
    nodes_ = allocated_;
  }

  boost::lockfree::stack<chunk*> free_;
  boost::lockfree::queue<chunk*> full_;
  std::atomic<std::size_t> free_count_{0};
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
