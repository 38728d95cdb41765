// The one process-wide state object behind every npuprof call.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "../clock.hpp"
#include "chunk_pool.hpp"
#include "device_hook.hpp"
#include "forward_hook.hpp"
#include "domain_table.hpp"
#include "platform.hpp"
#include "prefetch.hpp"
#include "string_table.hpp"
#include "thread_buffer.hpp"

namespace npuprof {
class session;
}

namespace npuprof::detail {

void on_thread_exit(void* buffer) noexcept;

/// Counters of problems met while recording; reported in the metadata.
struct recording_stats {
  std::atomic<std::uint64_t> truncated_messages{0};
  std::atomic<std::uint64_t> null_messages{0};
  std::atomic<std::uint64_t> unregistered_drops{0};  // a thread that could not get a buffer
  std::atomic<std::uint64_t> rejected_domain_names{0};
  std::atomic<std::uint64_t> dropped_range_ends{0};  // ends that found no room at all
  std::atomic<std::uint64_t> destroyed_domain_calls{0};  // mstx marks and range starts on a destroyed domain

  void bump(std::atomic<std::uint64_t>& c) noexcept { c.fetch_add(1, std::memory_order_relaxed); }
};

/// Names users gave to device streams.
class stream_names {
 public:
  void set(void* stream, std::string name) {
    std::lock_guard<std::mutex> lock(mutex_);
    names_[stream] = std::move(name);
  }
  std::unordered_map<void*, std::string> all() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return names_;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<void*, std::string> names_;
};

struct process_state {
  process_state() : threads(&on_thread_exit), origin(sample_clock()) {}

  domain_table domains;
  string_table strings;
  chunk_pool pool;
  thread_registry threads;
  recording_stats stats;
  stream_names streams;
  /// The first clock point of the process: the far end of every calibration.
  clock_point origin;

  /// Serialises session start, stop, dumps and drains.
  std::recursive_mutex control;
  std::atomic<session*> active{nullptr};
  /// The device backend of the running session; null when host only.
  std::atomic<device_recorder*> device{nullptr};
  /// Where markers are forwarded while domains carry forward_bit.
  std::atomic<marker_forwarder*> forwarder{nullptr};
  /// Whether recording threads may fetch lines for writing ahead of time.
  const bool can_prefetch = can_prefetch_for_write();
  bool exit_hook_installed = false;
};

/// The process-wide state. It is never destroyed, so that threads still
/// recording while the process exits never touch a dead object.
NPUPROF_PROCESS_WIDE inline process_state& state() {
  static process_state* s = new process_state();
  return *s;
}

}  // namespace npuprof::detail
