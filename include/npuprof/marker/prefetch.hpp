// Prefetching a cache line with the intent to write it.
//
// A stream's device events are read back by the resolver on another core, so
// by the time a recording thread takes an event again its memory sits in the
// other core's cache; so do the words the pool publishes through. Taking
// those lines for writing a few events ahead moves the transfer off the
// recording path, where the next locked instruction would wait for it.
#pragma once

#include "abi.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "platform.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Whether this processor has a prefetch that asks for a line in order to
/// write it (x86: PREFETCHW, which older processors may not decode; aarch64:
/// PRFM PSTL1KEEP, always there).
inline bool can_prefetch_for_write() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & (1u << 8)) != 0;  // PRFCHW (3DNowPrefetch)
#elif defined(__aarch64__)
  return true;
#else
  return false;
#endif
}

/// Starts taking the line of `p` for writing. Only a hint: it never faults,
/// whatever `p` points at. Call it only where can_prefetch_for_write() said yes.
NPUPROF_ALWAYS_INLINE void prefetch_for_write(const void* p) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("prefetchw (%0)" : : "r"(p));
#elif defined(__GNUC__) || defined(__clang__)
  __builtin_prefetch(p, 1, 3);
#else
  (void)p;
#endif
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
