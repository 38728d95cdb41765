// Names for threads and device streams, as shown on the timeline.
#pragma once

#include <string>
#include <string_view>

#include "buffer.hpp"
#include "detail/state.hpp"
#include "stream.hpp"

namespace npuprof {

/// Names the calling thread's track. Without it, the OS thread name is used
/// (as set with pthread_setname_np), else the thread id.
inline void name_thread(std::string_view name) {
  if (detail::thread_buffer* tb = detail::this_thread_buffer()) {
    detail::state().threads.set_name(tb->tid, std::string(name));
  }
}

/// Names a device stream's track (else "Stream N").
inline void name_stream(stream_t stream, std::string_view name) {
  detail::state().streams.set(stream, std::string(name));
}

}  // namespace npuprof
