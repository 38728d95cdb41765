// A chunk: one block of a thread buffer. A thread writes records into its
// current chunk and publishes them with a release store; the drainer reads
// them up to what is published. Full chunks travel to the session through a
// lock-free queue and come back through a lock-free free list.
#pragma once

#include "abi.hpp"

#include <atomic>
#include <cstdint>
#include <new>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

struct alignas(64) chunk {
  /// End of the records the owner has published (release store by the owner).
  std::atomic<std::uint64_t*> published{nullptr};
  /// Start of the records the drainer has not taken yet (drainer only).
  std::uint64_t* unread = nullptr;
  /// Start of the records live metrics have not read yet (drainer only).
  std::uint64_t* metered = nullptr;
  /// One past the last word of the data area.
  std::uint64_t* limit = nullptr;
  /// OS thread id of the owner when the chunk was handed out.
  std::uint32_t tid = 0;
  /// Size of the whole allocation, header included.
  std::uint32_t bytes = 0;

  std::uint64_t* data() noexcept { return reinterpret_cast<std::uint64_t*>(this + 1); }

  /// Makes the chunk empty and hands it to thread `owner_tid`.
  void reset(std::uint32_t owner_tid) noexcept {
    tid = owner_tid;
    unread = data();
    metered = data();
    published.store(data(), std::memory_order_release);
  }

  /// Makes a chunk in `mem`, `total_bytes` bytes long, header included.
  static chunk* create_in(void* mem, std::size_t total_bytes) noexcept {
    auto* c = new (mem) chunk();
    c->bytes = static_cast<std::uint32_t>(total_bytes);
    c->limit = c->data() + (total_bytes - sizeof(chunk)) / sizeof(std::uint64_t);
    c->reset(0);
    return c;
  }
};

static_assert(sizeof(chunk) == 64, "chunk header is one cache line");

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
