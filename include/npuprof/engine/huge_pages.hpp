// Large temporary arrays of an export backed by transparent huge pages.
#pragma once

#include "../marker/abi.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Asks the kernel to back [p, p + bytes) with huge pages where it can. An
/// export fills arrays of hundreds of megabytes exactly once; with 4 KiB
/// pages each first touch is a page fault, and those faults cost more than
/// the writing itself (on virtual machines above all). Advice only: nothing
/// changes where transparent huge pages are off, or for small arrays.
inline void advise_huge_pages(const void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  if (bytes < 2 * huge) return;
  const auto begin = (reinterpret_cast<std::uintptr_t>(p) + huge - 1) & ~(huge - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(huge - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

/// Reserves room for `n` elements, advised as above, before any is written.
template <class T, class A>
void reserve_huge(std::vector<T, A>& v, std::size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
