// What the recording path sees of the chunk pool: where a thread takes a
// fresh chunk and hands a full one. The pool itself (lock-free queues, the
// memory cap) belongs to the control side, which installs it in the process
// state when the first session is made.
#pragma once

#include "abi.hpp"

#include "chunk.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// The pool, as recording threads use it. The implementation lives for the
/// whole process, so a thread that read the pointer may always call it.
class chunk_source {
 public:
  /// A free chunk, or null when none is ready (the event is then dropped).
  /// Never locks or allocates.
  virtual chunk* take_free() noexcept = 0;
  /// A chunk for a thread's first event: a free one, else a new one while
  /// the memory cap allows.
  virtual chunk* take_for_new_thread() noexcept = 0;
  /// Hands a full chunk (or an exiting thread's last one) to the drainer.
  virtual void hand_full(chunk* c) noexcept = 0;

 protected:
  ~chunk_source() = default;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
