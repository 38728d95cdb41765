// Every thread buffer ever made, for the drainer and the exporters; buffers
// of exited threads are reused by new threads.
#pragma once

#include "../marker/abi.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../marker/chunk.hpp"
#include "mutex.hpp"
#include "../marker/thread_buffer.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Events dropped, by thread id.
using drop_list = std::vector<std::pair<std::uint32_t, std::uint64_t>>;

/// Every thread buffer ever made. Buffers of exited threads are reused by new
/// threads once their chunk has been handed to the drainer.
class thread_registry {
 public:
  explicit thread_registry(void (*on_exit)(void*)) { ::pthread_key_create(&key_, on_exit); }

  pthread_key_t key() const noexcept { return key_; }

  thread_buffer* acquire(std::uint32_t tid) {
    lock_guard<mutex> lock(mutex_);
    thread_buffer* tb = nullptr;
    if (!spare_.empty()) {
      tb = spare_.back();
      spare_.pop_back();
    } else {
      tb = new thread_buffer();
      all_.push_back(tb);
      tb->id_base = static_cast<std::uint64_t>(all_.size()) << 40;
    }
    tb->tid = tid;
    tb->open_scoped.store(0, std::memory_order_relaxed);
    tb->live.store(true, std::memory_order_release);
    return tb;
  }

  /// For fork(): held across it so that the child finds it unlocked.
  mutex& fork_lock() const noexcept { return mutex_; }

  /// In a child after fork(): only `self`, the forking thread, exists there.
  /// The others' buffers become spare; their chunks (the parent's records)
  /// go to `hand_back`. The caller holds fork_lock().
  template <class F>
  void forget_all_but(const thread_buffer* self, F&& hand_back) {
    for (thread_buffer* tb : all_) {
      if (tb == self || !tb->live.load(std::memory_order_relaxed)) continue;
      if (chunk* c = tb->current.exchange(nullptr, std::memory_order_relaxed)) hand_back(c);
      tb->write = tb->limit = nullptr;
      tb->dropped.store(0, std::memory_order_relaxed);
      tb->open_scoped.store(0, std::memory_order_relaxed);
      tb->handing_over.store(false, std::memory_order_relaxed);
      tb->live.store(false, std::memory_order_relaxed);
      spare_.push_back(tb);
    }
    exited_drops_.clear();
  }

  /// Called by an exiting thread after it handed over its chunk.
  void release(thread_buffer* tb) {
    lock_guard<mutex> lock(mutex_);
    const std::uint64_t d = tb->dropped.exchange(0, std::memory_order_relaxed);
    if (d != 0) add_to(exited_drops_, tb->tid, d);
    tb->live.store(false, std::memory_order_release);
    spare_.push_back(tb);
  }

  /// Calls f(thread_buffer&) for every buffer of a live thread.
  template <class F>
  void for_each_live(F&& f) {
    lock_guard<mutex> lock(mutex_);
    for (thread_buffer* tb : all_) {
      if (tb->live.load(std::memory_order_acquire)) f(*tb);
    }
  }

  /// Drops per thread id since the last call, and resets the counts. A
  /// thread id may appear more than once (a reused id): sum them.
  drop_list take_drops() {
    lock_guard<mutex> lock(mutex_);
    drop_list out;
    out.swap(exited_drops_);
    for (thread_buffer* tb : all_) {
      const std::uint64_t d = tb->dropped.exchange(0, std::memory_order_relaxed);
      if (d != 0) out.emplace_back(tb->tid, d);
    }
    return out;
  }

  /// Drops per thread id so far, without resetting them; as take_drops().
  drop_list peek_drops_by_thread() {
    lock_guard<mutex> lock(mutex_);
    drop_list out = exited_drops_;
    for (thread_buffer* tb : all_) {
      const std::uint64_t d = tb->dropped.load(std::memory_order_relaxed);
      if (d != 0) out.emplace_back(tb->tid, d);
    }
    return out;
  }

  void set_name(std::uint32_t tid, std::string name) {
    lock_guard<mutex> lock(mutex_);
    for (auto& entry : names_) {
      if (entry.first == tid) {
        entry.second = std::move(name);
        return;
      }
    }
    names_.emplace_back(tid, std::move(name));
  }

  /// Thread names by thread id, each id once.
  std::vector<std::pair<std::uint32_t, std::string>> names() const {
    lock_guard<mutex> lock(mutex_);
    return names_;
  }

 private:
  static void add_to(drop_list& list, std::uint32_t tid, std::uint64_t n) {
    for (auto& entry : list) {
      if (entry.first == tid) {
        entry.second += n;
        return;
      }
    }
    list.emplace_back(tid, n);
  }

  mutable mutex mutex_;
  pthread_key_t key_{};
  std::vector<thread_buffer*> all_;
  std::vector<thread_buffer*> spare_;
  drop_list exited_drops_;
  std::vector<std::pair<std::uint32_t, std::string>> names_;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
