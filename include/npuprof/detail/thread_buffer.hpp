// The per-thread side of recording: each thread that records owns one
// thread_buffer, reached through a plain thread-local pointer.
#pragma once

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "chunk.hpp"
#include "platform.hpp"

namespace npuprof::detail {

struct thread_buffer {
  // Written and read by the owning thread only.
  std::uint64_t* write = nullptr;  // next free word of the current chunk
  std::uint64_t* limit = nullptr;  // end of the current chunk
  std::uint64_t id_base = 0;       // high bits of this buffer's range ids
  std::uint64_t id_seq = 0;        // low bits of the last range id given out

  // Also read by the drainer.
  std::atomic<chunk*> current{nullptr};
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<bool> live{false};
  std::uint32_t tid = 0;
};

/// The calling thread's buffer; null until its first recorded event.
// initial-exec: a single TLS load also inside shared objects (no __tls_get_addr).
NPUPROF_PROCESS_WIDE __attribute__((tls_model("initial-exec"))) inline thread_local thread_buffer* t_buffer =
    nullptr;

/// A token of the calling thread, unique among the threads alive now (the
/// address of its own t_buffer: one instruction, no call).
inline const void* this_thread_token() noexcept { return &t_buffer; }

inline std::uint32_t os_thread_id() noexcept {
  return static_cast<std::uint32_t>(::syscall(SYS_gettid));
}

/// Every thread buffer ever made. Buffers of exited threads are reused by new
/// threads once their chunk has been handed to the drainer.
class thread_registry {
 public:
  explicit thread_registry(void (*on_exit)(void*)) { ::pthread_key_create(&key_, on_exit); }

  pthread_key_t key() const noexcept { return key_; }

  thread_buffer* acquire(std::uint32_t tid) {
    std::lock_guard<std::mutex> lock(mutex_);
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
    tb->live.store(true, std::memory_order_release);
    return tb;
  }

  /// For fork(): held across it so that the child finds it unlocked.
  std::mutex& fork_lock() const noexcept { return mutex_; }

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
      tb->live.store(false, std::memory_order_relaxed);
      spare_.push_back(tb);
    }
    exited_drops_.clear();
  }

  /// Called by an exiting thread after it handed over its chunk.
  void release(thread_buffer* tb) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::uint64_t d = tb->dropped.exchange(0, std::memory_order_relaxed);
    if (d != 0) exited_drops_[tb->tid] += d;
    tb->live.store(false, std::memory_order_release);
    spare_.push_back(tb);
  }

  /// Calls f(thread_buffer&) for every buffer of a live thread.
  template <class F>
  void for_each_live(F&& f) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (thread_buffer* tb : all_) {
      if (tb->live.load(std::memory_order_acquire)) f(*tb);
    }
  }

  /// Drops per thread id since the last call, and resets the counts.
  std::unordered_map<std::uint32_t, std::uint64_t> take_drops() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unordered_map<std::uint32_t, std::uint64_t> out;
    out.swap(exited_drops_);
    for (thread_buffer* tb : all_) {
      const std::uint64_t d = tb->dropped.exchange(0, std::memory_order_relaxed);
      if (d != 0) out[tb->tid] += d;
    }
    return out;
  }

  /// Drops per thread id so far, without resetting them.
  std::unordered_map<std::uint32_t, std::uint64_t> peek_drops_by_thread() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unordered_map<std::uint32_t, std::uint64_t> out = exited_drops_;
    for (thread_buffer* tb : all_) {
      const std::uint64_t d = tb->dropped.load(std::memory_order_relaxed);
      if (d != 0) out[tb->tid] += d;
    }
    return out;
  }

  /// Drops of live threads so far, without resetting them.
  std::uint64_t peek_drops() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::uint64_t n = 0;
    for (thread_buffer* tb : all_) n += tb->dropped.load(std::memory_order_relaxed);
    return n;
  }

  void set_name(std::uint32_t tid, std::string name) {
    std::lock_guard<std::mutex> lock(mutex_);
    names_[tid] = std::move(name);
  }

  std::unordered_map<std::uint32_t, std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return names_;
  }

 private:
  mutable std::mutex mutex_;
  pthread_key_t key_{};
  std::vector<thread_buffer*> all_;
  std::vector<thread_buffer*> spare_;
  std::unordered_map<std::uint32_t, std::uint64_t> exited_drops_;
  std::unordered_map<std::uint32_t, std::string> names_;
};

}  // namespace npuprof::detail
