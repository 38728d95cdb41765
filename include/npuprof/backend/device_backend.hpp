// What a session asks of a device backend. The Ascend runtime (acl_backend,
// the real library or the simulated one) is one implementation; the session
// knows only this interface.
#pragma once

#include "../marker/abi.hpp"

#include <chrono>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "../marker/device_hook.hpp"
#include "../engine/device_times.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A backend that ties markers to device streams. Recording threads call
/// record() (see device_recorder); the session calls the rest, from its
/// control side: begin_session() at start(), resolve() on its background
/// thread, snapshot() for a dump, forget_before() as a flight recorder's
/// window moves, finish() at stop() or the end of a cycle. Implementations
/// live for the whole process.
class device_backend : public device_recorder {
 public:
  /// Starts a session: counts from zero, `events_per_stream` device events
  /// pooled per stream.
  virtual void begin_session(std::uint32_t events_per_stream) = 0;
  /// Reads the device times of events that completed, without waiting.
  virtual void resolve() = 0;
  /// Waits up to `wait` for events in flight, then hands over every device
  /// time of the session (or cycle) and starts afresh.
  virtual device_times finish(std::chrono::milliseconds wait) = 0;
  /// The device times known now; recording goes on.
  virtual device_times snapshot() = 0;
  /// The device time (device clock, ns) of event `seq` on `stream`, if it
  /// was resolved and is still kept. Background thread only.
  virtual bool device_ns(std::uint64_t stream, std::uint64_t seq, std::int64_t& out) const = 0;
  /// Forgets device times of events before `from_ns` (steady clock).
  virtual void forget_before(std::int64_t from_ns) = 0;
  /// What the metadata says about the backend and its device events.
  virtual nlohmann::json describe() const = 0;
  /// Whether the runtime is a simulation (always said where it shows).
  virtual bool simulated() const noexcept = 0;
  /// The device the events were recorded on.
  virtual std::int32_t device() const noexcept = 0;
  /// The device's name as its runtime reports it (its chip, e.g.
  /// "Ascend910B"), or "" when the runtime does not say.
  virtual std::string device_name() const = 0;

 protected:
  ~device_backend() = default;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
