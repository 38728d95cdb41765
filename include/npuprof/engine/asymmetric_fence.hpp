// An asymmetric fence: a free "light" side for a thread on the hot path and
// a costly "heavy" side, run rarely by another thread, that makes the pair
// act as if both had run a full fence.
//
// A stream's event pool uses it so that the one thread that records on a
// stream takes its events with plain loads and stores, no locked
// instruction, until a second thread records on the same stream. The
// heavy side is Linux's membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), which
// runs a full barrier on every thread of the process that is running now.
// Where it is missing (older kernels, some sandboxes, emulators), the pool
// never takes the light path.
#pragma once

#include "../marker/abi.hpp"

#include <atomic>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Registers the process for the heavy side, once; false when the kernel
/// does not offer it, and then heavy_fence() must not be relied on.
inline bool asymmetric_fence_available() noexcept {
#if defined(__linux__) && defined(SYS_membarrier)
  static const bool ok = [] {
    const long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
    return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
  }();
  return ok;
#else
  return false;
#endif
}

/// The hot path's side: keeps the compiler from moving memory accesses
/// across it; the processor is fenced by heavy_fence() when it matters.
inline void light_fence() noexcept { std::atomic_signal_fence(std::memory_order_seq_cst); }

/// The rare side: a full fence here and on every running thread of the
/// process. Only after asymmetric_fence_available() returned true.
inline void heavy_fence() noexcept {
#if defined(__linux__) && defined(SYS_membarrier)
  syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
#endif
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
