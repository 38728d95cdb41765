// Address space for chunks. The whole memory cap is mapped up front, but a
// page costs memory only once it is written: chunks nobody wrote yet are
// room a burst can take without anyone allocating, and a chunk given back
// returns its pages to the system and keeps its address for reuse.
#pragma once

#include "../marker/abi.hpp"
#include "huge_pages.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Slots of address space, one chunk each. Not thread-safe: the chunk pool
/// calls it under its lock.
class chunk_arena {
 public:
  /// A slot of `bytes` bytes (a multiple of 64), its pages not yet written
  /// (or given back); null when no address space could be mapped.
  void* take(std::size_t bytes) {
    std::vector<void*>& spare = spare_[bytes];
    if (!spare.empty()) {
      void* slot = spare.back();
      spare.pop_back();
      return slot;
    }
    if (static_cast<std::size_t>(end_ - next_) < bytes && !map_region(bytes)) return nullptr;
    void* slot = next_;
    next_ += bytes;
    return slot;
  }

  /// Keeps a slot for the next take() of its size, its pages returned to
  /// the system if it was `written`.
  void give_back(void* slot, std::size_t bytes, bool written) {
    std::vector<void*>& spare = spare_[bytes];
    if (spare.size() == spare.capacity())
      spare.reserve(std::max<std::size_t>(64, 2 * spare.size()));  // may throw: first
    if (written) forget_pages(slot, bytes);
    spare.push_back(slot);
  }

 private:
  static void forget_pages(void* slot, std::size_t bytes) noexcept {
    const std::uintptr_t page = page_size();
    const std::uintptr_t from = (reinterpret_cast<std::uintptr_t>(slot) + page - 1) & ~(page - 1);
    const std::uintptr_t to = (reinterpret_cast<std::uintptr_t>(slot) + bytes) & ~(page - 1);
    if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
  }

  // Regions are never unmapped: a slot's address stays valid for the life
  // of the process, as a chunk a slow thread still holds may point into it.
  bool map_region(std::size_t bytes) {
    const std::size_t size = std::max<std::size_t>(bytes, region_bytes);
    void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    advise_huge_pages(p, size);  // a burst into unwritten chunks takes a fault per 2 MiB, not per 4 KiB
    next_ = static_cast<char*>(p);
    end_ = next_ + size;
    return true;
  }

  static std::uintptr_t page_size() noexcept {
    static const auto size = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    return size;
  }

  // Mapped in steps of 64 MiB: what is mapped and never written costs
  // address space only.
  static constexpr std::size_t region_bytes = std::size_t{64} << 20;

  char* next_ = nullptr;
  char* end_ = nullptr;
  std::map<std::size_t, std::vector<void*>> spare_;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
