// Locks of the marker layer's tables, on pthreads: what std::mutex and
// std::recursive_mutex are on Linux, without <mutex>, which the marker header
// keeps out of every instrumented file. Both are BasicLockable, so the
// control side can still use std::lock_guard and std::unique_lock on them.
#pragma once

#include "../marker/abi.hpp"

#include <pthread.h>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

class mutex {
 public:
  mutex() = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;
  ~mutex() { ::pthread_mutex_destroy(&m_); }

  void lock() noexcept { ::pthread_mutex_lock(&m_); }
  bool try_lock() noexcept { return ::pthread_mutex_trylock(&m_) == 0; }
  void unlock() noexcept { ::pthread_mutex_unlock(&m_); }

 private:
  pthread_mutex_t m_ = PTHREAD_MUTEX_INITIALIZER;
};

class recursive_mutex {
 public:
  recursive_mutex() noexcept {
    pthread_mutexattr_t attr;
    ::pthread_mutexattr_init(&attr);
    ::pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    ::pthread_mutex_init(&m_, &attr);
    ::pthread_mutexattr_destroy(&attr);
  }
  recursive_mutex(const recursive_mutex&) = delete;
  recursive_mutex& operator=(const recursive_mutex&) = delete;
  ~recursive_mutex() { ::pthread_mutex_destroy(&m_); }

  void lock() noexcept { ::pthread_mutex_lock(&m_); }
  bool try_lock() noexcept { return ::pthread_mutex_trylock(&m_) == 0; }
  void unlock() noexcept { ::pthread_mutex_unlock(&m_); }

 private:
  pthread_mutex_t m_;
};

/// Holds a lock for a scope (std::lock_guard, without <mutex>).
template <class M>
class lock_guard {
 public:
  explicit lock_guard(M& m) noexcept : m_(m) { m_.lock(); }
  lock_guard(const lock_guard&) = delete;
  lock_guard& operator=(const lock_guard&) = delete;
  ~lock_guard() { m_.unlock(); }

 private:
  M& m_;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
