// The per-thread side of recording: each thread that records owns one
// thread_buffer, reached through a plain thread-local pointer.
#pragma once

#include "abi.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

#include "chunk.hpp"
#include "platform.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

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
  // Set while the owner hands its chunk over (hand_over_current). Fits in
  // padding: the layout is unchanged.
  std::atomic<bool> handing_over{false};
  std::uint32_t tid = 0;
  // Scoped ranges with a registered message begun and not yet ended: they
  // write their one record at their end, so a trace cut meanwhile can only
  // count them. Changed by the owning thread only (writer.hpp).
  std::atomic<std::uint32_t> open_scoped{0};
};

static_assert(sizeof(void*) != 8 || sizeof(thread_buffer) == 64, "thread_buffer keeps the layout modules share");

/// The calling thread's buffer; null until its first recorded event.
// initial-exec: a single TLS load also inside shared objects (no __tls_get_addr).
NPUPROF_PROCESS_WIDE __attribute__((tls_model("initial-exec"))) inline thread_local thread_buffer* t_buffer = nullptr;

/// A token of the calling thread, unique among the threads alive now (the
/// address of its own t_buffer: one instruction, no call).
inline const void* this_thread_token() noexcept { return &t_buffer; }

inline std::uint32_t os_thread_id() noexcept { return static_cast<std::uint32_t>(::syscall(SYS_gettid)); }

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
