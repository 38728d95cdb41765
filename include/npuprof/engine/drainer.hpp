// The background thread that collects what recording threads hand over.
// Every period it runs the session's flush; between flushes it checks the
// chunk pool's ready reserve every millisecond (two relaxed loads) and tops
// it up, so that a burst that empties it is refilled before threads run
// out, without recording threads ever waking this one.
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "../naming.hpp"
#include "chunk_pool.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// In a fork() child, a handle of a thread of the parent: never joined, never
/// destroyed, and kept where leak checkers see it.
inline void keep_parents_thread(std::thread&& t) noexcept {
  static std::vector<std::thread*>* kept = new std::vector<std::thread*>();
  auto* handle = new std::thread(std::move(t));
  try {
    kept->push_back(handle);
  } catch (...) {
    // Out of memory: left unreachable, still never destroyed.
  }
}

class drainer {
 public:
  drainer() = default;
  drainer(const drainer&) = delete;
  drainer& operator=(const drainer&) = delete;

  /// Starts the thread (named "npuprof" in traces): it runs `begin` once,
  /// then `flush` every `period` until stop().
  void start(std::chrono::milliseconds period, std::function<void()> begin, std::function<void()> flush) {
    stop_requested_ = false;
    period_ = period;
    begin_ = std::move(begin);
    flush_ = std::move(flush);
    thread_ = std::thread([this] { loop(); });
  }

  /// Asks the thread to end and waits for it.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_requested_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  /// In a fork() child, where the thread is the parent's: its handle is
  /// never joined, never destroyed.
  void abandon_in_child() noexcept {
    if (thread_.joinable()) keep_parents_thread(std::move(thread_));
  }

 private:
  void loop() {
    using clock = std::chrono::steady_clock;
    name_thread("npuprof");
    begin_();
    constexpr auto reserve_check = std::chrono::milliseconds(1);
    chunk_pool& pool = detail::pool();
    auto next_flush = clock::now() + period_;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_requested_) {
      wake_.wait_for(lock, std::min<clock::duration>(reserve_check, next_flush - clock::now()));
      if (stop_requested_) break;
      lock.unlock();
      if (clock::now() < next_flush) {
        if (pool.low()) pool.top_up();
      } else {
        next_flush = clock::now() + period_;
        flush_();
      }
      lock.lock();
    }
  }

  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_requested_ = false;  // guarded by mutex_
  std::chrono::milliseconds period_{10};
  std::function<void()> begin_, flush_;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
