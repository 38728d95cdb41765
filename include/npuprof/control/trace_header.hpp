// What a trace says about itself: the process, its names, the backend, and
// the counts of what was lost, as the session collects them.
#pragma once

#include "../marker/abi.hpp"

#include <unistd.h>

#include <atomic>
#include <fstream>
#include <random>
#include <cstdint>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "../backend/device_backend.hpp"
#include "../clock.hpp"
#include "../engine/state.hpp"
#include "../export/output_dir.hpp"
#include "../trace_data.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A new trace id: 32 hex digits.
inline std::string new_trace_id() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(wall_ns()));
  return fmt::format("{:016x}{:016x}", gen(), gen());
}

/// This process's name, as the kernel has it.
inline std::string process_name() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name.empty() ? std::string("process") : name;
}

/// The process, and the names of its domains, threads and streams.
inline void describe_process(trace_data& d) {
  process_state& st = state();
  d.pid = static_cast<std::uint32_t>(::getpid());
  d.process_name = process_name();
  d.hostname = host_name();
  d.domains = st.domains.names();
  for (auto& [tid, name] : st.threads.names()) d.thread_names[tid] = std::move(name);
  for (auto& [stream, name] : st.streams.all()) d.stream_names[reinterpret_cast<std::uintptr_t>(stream)] = name;
}

/// The backend: the device's own description, or what was noted when none
/// could be used (`note`). Under the control lock: the drainer trims the
/// device's times and clock under it.
inline void describe_backend(trace_data& d, device_backend* device, const nlohmann::json& note) {
  if (device == nullptr) {
    d.backend = note;
    return;
  }
  d.backend = device->describe();
  if (note.contains("mstx_forward")) d.backend["mstx_forward"] = note["mstx_forward"];
  d.device_id = device->device();
  d.device_simulated = device->simulated();
  d.device_name = device->device_name();
}

/// The counts of what was lost, into `d`: with `take`, taken (the data ends
/// a session or a cycle), else only read (a dump). `open_scoped` was read
/// with the records (see drained_records::take_published). Returns the drops.
inline std::uint64_t count_losses(trace_data& d, bool take, std::uint64_t open_scoped) {
  process_state& st = state();
  recording_stats& stats = markers().stats;
  auto count = [&](std::atomic<std::uint64_t>& n) { return take ? n.exchange(0) : n.load(); };
  d.counts.dropped_range_ends = count(stats.dropped_range_ends);
  for (auto& [tid, n] : take ? st.threads.take_drops() : st.threads.peek_drops_by_thread()) {
    d.counts.dropped_by_thread[tid] += n;
  }
  for (auto& [tid, n] : d.counts.dropped_by_thread) d.counts.dropped += n;
  d.counts.dropped += count(stats.unregistered_drops);
  d.counts.truncated_messages = count(stats.truncated_messages);
  d.counts.null_messages = count(stats.null_messages);
  d.counts.rejected_domain_names = stats.rejected_domain_names.load();
  d.counts.domains_over_limit = st.domains.over_limit_count();
  d.counts.open_scoped_ranges = open_scoped;
  d.counts.destroyed_domain_calls = count(stats.destroyed_domain_calls);
  d.counts.foreign_domain_handles = count(stats.foreign_domain_handles);
  d.counts.mstx_ranges_over_limit = count(stats.mstx_ranges_over_limit);
  return d.counts.dropped;
}

/// Starts the loss counts again (the session starts, or clear()); returns
/// the drops they held.
inline std::uint64_t reset_losses() {
  recording_stats& stats = markers().stats;
  std::uint64_t drops = 0;
  for (auto& [tid, n] : state().threads.take_drops()) drops += n;
  stats.truncated_messages.exchange(0);
  stats.null_messages.exchange(0);
  drops += stats.unregistered_drops.exchange(0);
  stats.dropped_range_ends.exchange(0);
  return drops;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
