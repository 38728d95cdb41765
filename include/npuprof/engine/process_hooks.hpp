// The process events a running session answers: exit(), std::terminate and
// fork(). Installed once per process, by the first session that starts;
// what they ask of the session comes in as two functions, so this part
// knows nothing of a session's insides.
#pragma once

#include "../marker/abi.hpp"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <new>

#include "chunk_pool.hpp"
#include "mutex.hpp"
#include "state.hpp"
#include "../marker/thread_buffer.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

class session_core;

/// What the hooks ask of the session side.
struct session_side {
  /// Stops and writes the running session, if any; `why` says when.
  void (*stop_running)(const char* why) = nullptr;
  /// In a fork() child: lets go of the parent's session, `s`.
  void (*abandon_in_child)(session_core* s) noexcept = nullptr;
};

inline session_side& installed_session_side() noexcept {
  static session_side side;
  return side;
}

inline void stop_running_session_at_exit() {
  if (state().exit_write_deferred.load(std::memory_order_acquire)) return;
  if (auto stop = installed_session_side().stop_running) stop("exit");
}

// std::terminate (an exception nobody caught, a throwing destructor) ends the
// process without exit handlers: the trace is written first, then the
// handler that was there before runs (by default: abort).
inline std::terminate_handler& terminate_before_npuprof() {
  static std::terminate_handler previous = nullptr;
  return previous;
}

inline void on_terminate() {
  static std::atomic<bool> once{false};
  if (!once.exchange(true)) {
    if (auto stop = installed_session_side().stop_running) stop("terminate");
  }
  if (std::terminate_handler previous = terminate_before_npuprof()) previous();
  std::abort();
}

// fork() while a session runs: the child gets a copy of every lock and of
// the session, but none of its threads. The locks are held across fork()
// (control first: the others are leaves, never held while taking another),
// so the child gets them in a known state; there it drops the parent's session
// and the buffers of threads it does not have, and may start its own.
inline void before_fork() noexcept {
  process_state& st = state();
  st.control.lock();
  st.threads.fork_lock().lock();
  pool().fork_lock().lock();
  st.strings.fork_lock().lock();
  st.domains.fork_lock().lock();
}

inline void unlock_fork_leaf_locks() noexcept {
  process_state& st = state();
  st.domains.fork_lock().unlock();
  st.strings.fork_lock().unlock();
  pool().fork_lock().unlock();
  st.threads.fork_lock().unlock();
}

inline void after_fork_in_parent() noexcept {
  unlock_fork_leaf_locks();
  state().control.unlock();
}

inline void after_fork_in_child() noexcept {
  process_state& st = state();
  unlock_fork_leaf_locks();
  // The child's thread has a new id, which the recursive mutex does not take
  // for its owner's: unlocked (for race detectors' books), then made anew.
  st.control.unlock();
  new (&st.control) recursive_mutex();
  st.threads.forget_all_but(t_buffer, [&](chunk* c) { pool().hand_full(c); });
  if (session_core* s = st.active.exchange(nullptr, std::memory_order_acq_rel)) {
    if (auto abandon = installed_session_side().abandon_in_child) abandon(s);
  }
}

/// Installs the hooks once per process; the caller holds state().control.
inline void install_process_hooks(const session_side& side) {
  process_state& st = state();
  if (st.exit_hook_installed) return;
  st.exit_hook_installed = true;
  installed_session_side() = side;
  std::atexit(&stop_running_session_at_exit);
  terminate_before_npuprof() = std::set_terminate(&on_terminate);
  ::pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
