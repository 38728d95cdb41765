// The signal that asks a flight recorder for a dump. Its handler only sets a
// flag (async-signal-safe); the session's background thread sees the flag
// and dumps from an ordinary thread.
#pragma once

#include "../marker/abi.hpp"

#include <signal.h>

#include <atomic>

#include "../marker/platform.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

NPUPROF_PROCESS_WIDE inline std::atomic<bool> dump_signal_raised{false};

static_assert(std::atomic<bool>::is_always_lock_free, "the signal flag must be lock-free");

extern "C" inline void npuprof_on_dump_signal(int) { dump_signal_raised.store(true, std::memory_order_relaxed); }

/// Installs the handler of `sig` while a flight recorder runs; puts the
/// previous one back when it ends.
class dump_signal {
 public:
  void install(int sig) {
    if (sig == 0 || sig_ != 0) return;
    struct sigaction sa {};
    sa.sa_handler = &npuprof_on_dump_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    if (::sigaction(sig, &sa, &previous_) == 0) sig_ = sig;
  }

  void restore() {
    if (sig_ == 0) return;
    ::sigaction(sig_, &previous_, nullptr);
    sig_ = 0;
  }

  /// True once per raised signal.
  static bool take() noexcept { return dump_signal_raised.exchange(false, std::memory_order_relaxed); }

 private:
  int sig_ = 0;
  struct sigaction previous_ {};
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
