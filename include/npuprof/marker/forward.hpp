// The recording path's side of forwarding: out of line, taken only while a
// domain's state carries forward_bit.
#pragma once

#include "abi.hpp"

#include <cstdint>

#include "../stream.hpp"
#include "forward_hook.hpp"
#include "message.hpp"
#include "marker_state.hpp"
#include "platform.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

constexpr std::uint32_t forwarded_domain(std::uint16_t state) noexcept { return domain_index(state); }

NPUPROF_COLD inline void forward_mark(std::uint16_t state, const message& m, stream_t stream) noexcept {
  if (marker_forwarder* f = markers().forwarder.load(std::memory_order_acquire)) {
    f->mark(forwarded_domain(state), m, stream);
  }
}

NPUPROF_COLD inline std::uint64_t forward_range_start(std::uint16_t state, const message& m, stream_t stream) noexcept {
  marker_forwarder* f = markers().forwarder.load(std::memory_order_acquire);
  return f != nullptr ? f->range_start(forwarded_domain(state), m, stream) : 0;
}

NPUPROF_COLD inline void forward_range_end(std::uint32_t domain, std::uint64_t forwarded_id) noexcept {
  if (marker_forwarder* f = markers().forwarder.load(std::memory_order_acquire)) {
    f->range_end(domain, forwarded_id);
  }
}

/// For id-matched ranges: the end may come from any thread, with only the id.
NPUPROF_COLD inline void forward_id_range_start(std::uint16_t state, const message& m, stream_t stream,
                                                std::uint64_t id) noexcept {
  if (marker_forwarder* f = markers().forwarder.load(std::memory_order_acquire)) {
    const std::uint32_t domain = forwarded_domain(state);
    if (const std::uint64_t fid = f->range_start(domain, m, stream)) f->remember(id, domain, fid);
  }
}

NPUPROF_COLD inline void forward_id_range_end(std::uint64_t id) noexcept {
  if (marker_forwarder* f = markers().forwarder.load(std::memory_order_acquire)) f->end_remembered(id);
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
