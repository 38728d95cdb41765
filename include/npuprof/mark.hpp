// Marks: instant events.
#pragma once

#include "marker/abi.hpp"

#include "marker/forward.hpp"
#include "marker/message.hpp"
#include "marker/writer.hpp"
#include "domain.hpp"
#include "filter.hpp"
#include "stream.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

/// Records an instant event named `msg` in domain D. With a stream, the mark
/// is also tied to that device stream.
///
/// `msg` is a registered_string (cheapest: its id is stored), a string
/// literal or any text (copied, up to 255 bytes; longer is truncated and
/// counted). Thread safety: any thread, without locks. Cost: one counter
/// read and a store into the thread's buffer; a load and a branch when the
/// domain does not record; nothing when D is compiled out.
///
///     npuprof::mark("checkpoint");
///     npuprof::mark<kernels>(kLaunch, stream);
template <class D = default_domain>
NPUPROF_ALWAYS_INLINE void mark(detail::message msg, stream_t stream = nullptr) noexcept {
  NPUPROF_DETAIL_CHECK_DOMAIN(D);
  if constexpr (compiled_in<D>) {
    if (const std::uint16_t s = detail::recording_state(detail::handle_of<D>)) {
      detail::write_mark(detail::tag_index(s), msg, stream);
      if (NPUPROF_UNLIKELY(s & detail::forward_bit)) detail::forward_mark(s, msg, stream);
    }
  }
}

/// Records a mark in a domain known at run time (see domain_by_name), for
/// code that learns its domain names from configuration or a plugin.
/// Same thread safety and cost as the typed overload.
inline void mark(runtime_domain d, detail::message msg, stream_t stream = nullptr) noexcept {
  if constexpr (compiled_in<runtime_domain>) {
    if (const std::uint16_t s = detail::recording_state(d.handle())) {
      detail::write_mark(detail::tag_index(s), msg, stream);
      if (NPUPROF_UNLIKELY(s & detail::forward_bit)) detail::forward_mark(s, msg, stream);
    }
  } else {
    (void)d, (void)msg, (void)stream;
  }
}

NPUPROF_ABI_END
}  // namespace npuprof
