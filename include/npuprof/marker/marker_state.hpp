// The marker layer's process-wide state: what recording threads read on their
// way to a buffer, and the table through which the marker layer reaches the
// control side (<npuprof/session.hpp>) on its slow paths, as NVTX reaches its
// tool through a function table. Until the control side installs the table
// (its first use in the process), the marker layer keeps what it is given
// (see pending.hpp) and records nothing: no session can run without it.
#pragma once

#include "abi.hpp"

#include <atomic>
#include <cstdint>
#include <string_view>

#include "../stream.hpp"
#include "chunk_source.hpp"
#include "device_hook.hpp"
#include "forward_hook.hpp"
#include "platform.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

struct thread_buffer;
struct domain_handle;

/// Counters of problems met while recording; reported in the metadata.
struct recording_stats {
  std::atomic<std::uint64_t> truncated_messages{0};
  std::atomic<std::uint64_t> null_messages{0};
  std::atomic<std::uint64_t> unregistered_drops{0};  // a thread that could not get a buffer
  std::atomic<std::uint64_t> rejected_domain_names{0};
  std::atomic<std::uint64_t> dropped_range_ends{0};      // ends that found no room at all
  std::atomic<std::uint64_t> destroyed_domain_calls{0};  // mstx marks and range starts on a destroyed domain
  std::atomic<std::uint64_t> foreign_domain_handles{0};  // mstx calls with a handle mstxDomainCreateA did not return
  std::atomic<std::uint64_t> mstx_ranges_over_limit{0};  // mstx ranges begun with no 32-bit id free

  void bump(std::atomic<std::uint64_t>& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }
};

/// The control side's entry points for the marker layer's slow paths. Each
/// is called once per thread, domain, string or name, never per event.
struct control_table {
  /// Registers the calling thread and gives it a buffer; null on failure.
  thread_buffer* (*register_thread)() noexcept;
  /// Gives `h` its index and state; returns the state (0 on failure).
  std::uint16_t (*register_domain)(domain_handle& h) noexcept;
  /// The handle of the run-time domain called `name`, made on first use.
  domain_handle& (*domain_by_name)(std::string_view name);
  /// The id of `s` in the table of interned strings.
  std::uint64_t (*intern)(std::string_view s);
  /// The interned string of `id`; valid for the life of the process.
  std::string_view (*lookup)(std::uint64_t id);
  void (*name_thread)(std::string_view name);
  void (*name_stream)(stream_t stream, std::string_view name);
  /// Takes over what the marker layer kept while no table was installed.
  void (*adopt_pending)();
};

struct marker_state {
  /// Installed by the control side on its first use; never removed.
  std::atomic<const control_table*> control{nullptr};
  /// The chunk pool: installed with the first session and kept for the life
  /// of the process, so that threads outliving a session still hand their
  /// last chunks back.
  std::atomic<chunk_source*> chunks{nullptr};
  /// The device backend of the running session; null when host only.
  std::atomic<device_recorder*> device{nullptr};
  /// Where markers are forwarded while domains carry forward_bit.
  std::atomic<marker_forwarder*> forwarder{nullptr};
  /// Whether recording threads may fetch lines for writing ahead of time.
  std::atomic<bool> can_prefetch{false};
  recording_stats stats;
};

/// Constant-initialised, so that no file that includes the marker header
/// runs or emits a constructor for it; process-wide, so that shared objects
/// built with hidden visibility share it.
NPUPROF_PROCESS_WIDE inline marker_state g_markers;

inline marker_state& markers() noexcept { return g_markers; }

/// The installed control table, or null.
inline const control_table* control() noexcept { return g_markers.control.load(std::memory_order_acquire); }

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
