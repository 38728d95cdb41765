// What the recording path sees of a device backend: one call that records a
// device event on a stream and names it by a sequence number.
#pragma once

#include "abi.hpp"

#include <cstdint>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// The sequence number of a device event that could not be recorded (its
/// stream's pool ran dry, or the runtime refused); the host event stands.
inline constexpr std::uint64_t no_device_event = ~std::uint64_t{0};

/// A backend that ties markers to device streams. Implementations live for
/// the whole process, so a thread that read the pointer may always call it.
class device_recorder {
 public:
  /// Records a device event on `stream`; returns its per-stream sequence
  /// number or no_device_event. Never blocks, locks or throws.
  virtual std::uint64_t record(void* stream) noexcept = 0;

 protected:
  ~device_recorder() = default;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
