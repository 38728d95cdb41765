// Names for threads and device streams, as shown on the timeline.
#pragma once

#include "marker/abi.hpp"

#include <string>
#include <string_view>
#include <utility>

#include "marker/kept_string.hpp"
#include "marker/marker_state.hpp"
#include "marker/pending.hpp"
#include "stream.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

/// Names the calling thread's track. Without it, the OS thread name is used
/// (as set with pthread_setname_np), else the thread id. May be called
/// before any session exists (the name is kept until one starts); a later
/// name wins. Thread safety: names only the calling thread. Cost: a copy of
/// the name (an allocation); not for the hot path.
inline void name_thread(std::string_view name) {
  if (const detail::control_table* c = detail::control()) {
    c->name_thread(name);
  } else {
    // Taken (and freed) when the thread registers.
    delete[] std::exchange(detail::t_pending_thread_name, detail::keep_copy(name).data());
  }
}

/// Names a device stream's track (else "Stream N"), from any thread, before
/// or during a session; a later name wins. Cost: a copy of the name.
inline void name_stream(stream_t stream, std::string_view name) {
  if (const detail::control_table* c = detail::control()) {
    c->name_stream(stream, name);
  } else {
    detail::name_stream_pending(stream, name);
  }
}

NPUPROF_ABI_END
}  // namespace npuprof
