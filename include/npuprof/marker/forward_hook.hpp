// What the recording path sees of marker forwarding: while a session
// forwards markers to another mstx tool, every domain's state carries
// forward_bit, and markers also call the forwarder.
#pragma once

#include "abi.hpp"

#include <cstdint>

#include "../stream.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

class message;

/// Set in a domain's state while markers are forwarded. The low bits stay
/// the domain index + 1, so tags (which mask the index) are unchanged.
inline constexpr std::uint16_t forward_bit = 0x8000;

/// A domain's state, what the recording path reads: 0 when it does not
/// record, else its index + 1, with forward_bit while markers are forwarded.
constexpr std::uint16_t domain_state(std::uint32_t index, bool forwarding) noexcept {
  return static_cast<std::uint16_t>((index + 1) | (forwarding ? forward_bit : 0));
}

/// The domain index of a recording state, as a tag takes it: forward_bit
/// stays above the bits make_tag keeps, so it costs no masking here.
constexpr std::uint32_t tag_index(std::uint16_t state) noexcept { return state - 1u; }

/// The domain index of a recording state, forward_bit or not.
constexpr std::uint32_t domain_index(std::uint16_t state) noexcept {
  return static_cast<std::uint32_t>(state & ~forward_bit) - 1u;
}

/// Passes markers on to another mstx implementation. Implementations live
/// for the whole process.
class marker_forwarder {
 public:
  virtual void mark(std::uint32_t domain, const message& m, stream_t stream) noexcept = 0;
  /// Returns the other tool's range id (0: none).
  virtual std::uint64_t range_start(std::uint32_t domain, const message& m, stream_t stream) noexcept = 0;
  virtual void range_end(std::uint32_t domain, std::uint64_t forwarded_id) noexcept = 0;
  /// For ranges that may end on another thread: remembers which forwarded
  /// range npuprof's range `id` is, and ends it by npuprof's id.
  virtual void remember(std::uint64_t id, std::uint32_t domain, std::uint64_t forwarded_id) noexcept = 0;
  virtual void end_remembered(std::uint64_t id) noexcept = 0;

 protected:
  ~marker_forwarder() = default;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
