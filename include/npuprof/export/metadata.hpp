// profiler_metadata.json: what a reader needs to trust and align the trace:
// configuration, clock calibration, and every count of lost or odd events.
#pragma once

#include "../marker/abi.hpp"

#include <string>

#include <nlohmann/json.hpp>

#include "../clock.hpp"
#include "../trace_data.hpp"
#include "../version.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// What the Ascend tools read as a job's layout: the rank and world size,
/// unless the program gave its own (session::add_metadata("distributed_args",
/// {...}), as training frameworks give tensor, pipeline and data parallel
/// sizes; an object, as the tools read it: other values stay under "user"
/// only). Null outside a distributed job.
inline nlohmann::json distributed_args(const trace_data& d, const nlohmann::json& user) {
  if (user.is_object() && user.contains("distributed_args") && user["distributed_args"].is_object()) {
    return user["distributed_args"];
  }
  const int rank = d.config.value("rank", -1), world_size = d.config.value("world_size", -1);
  if (rank < 0 && world_size < 0) return nullptr;
  return {{"rank", rank}, {"world_size", world_size}};
}

/// profiler_info.json (profiler_info_{rank}.json with a rank), as torch_npu
/// writes it beside its run: the configuration, when the data begins and
/// ends, the rank. The Ascend tools take the rank from its name.
inline std::string profiler_info_name(const trace_data& d) {
  const int rank = d.config.value("rank", -1);
  return rank >= 0 ? "profiler_info_" + std::to_string(rank) + ".json" : "profiler_info.json";
}

inline nlohmann::json render_profiler_info(const trace_data& d) {
  nlohmann::json info = {
      {"config", d.config},
      {"start_info", {{"collectionTimeBegin", d.wall_start_ns}, {"MonotonicTimeBegin", d.start_ns}}},
      {"end_info", {{"collectionTimeEnd", d.wall_start_ns + (d.end_ns - d.start_ns)}, {"MonotonicTimeEnd", d.end_ns}}},
      {"npuprof_version", version_string},
  };
  if (const int rank = d.config.value("rank", -1); rank >= 0) info["rank_id"] = rank;
  return info;
}

/// The metadata of `d`, whose events were written elsewhere: `events` and
/// `device_events` of them.
inline nlohmann::json render_metadata(const trace_data& d, std::size_t events, std::size_t device_events,
                                      const std::string& trace_id, const nlohmann::json& user) {
  nlohmann::json by_thread = nlohmann::json::object();
  for (auto& [tid, n] : d.counts.dropped_by_thread) by_thread[std::to_string(tid)] = n;
  auto rank_of = [&](const char* key) { return d.config.value(key, -1); };
  nlohmann::json out = {
      {"npuprof_version", version_string},
      {"trace_id", trace_id},
      {"rank",
       {{"rank", rank_of("rank")}, {"local_rank", rank_of("local_rank")}, {"world_size", rank_of("world_size")}}},
      {"user", user},
      {"hostname", d.hostname},
      {"pid", d.pid},
      {"process_name", d.process_name},
      {"backend", d.backend},
      {"config", d.config},
      {"clock",
       {{"source", raw_clock_name},
        {"timestamps", "steady_clock (CLOCK_MONOTONIC) microseconds"},
        {"ns_per_tick", d.clock.ns_per_tick()},
        {"calibration",
         {{{"ticks", d.clock.first().ticks}, {"steady_ns", d.clock.first().steady}},
          {{"ticks", d.clock.last().ticks}, {"steady_ns", d.clock.last().steady}}}},
        {"steady_start_ns", d.start_ns},
        {"wall_start_ns", d.wall_start_ns}}},
      {"session", {{"start_ns", d.start_ns}, {"end_ns", d.end_ns}, {"events", events}}},
      {"collection", d.collection},
      {"counts",
       {{"dropped_events", d.counts.dropped},
        {"dropped_by_thread", by_thread},
        {"truncated_messages", d.counts.truncated_messages},
        {"null_messages", d.counts.null_messages},
        {"unmatched_range_ends", d.counts.unmatched_range_ends},
        {"repeated_range_ends", d.counts.repeated_range_ends},
        {"open_ranges", d.counts.open_ranges},
        {"open_scoped_ranges", d.counts.open_scoped_ranges},
        {"dropped_range_ends", d.counts.dropped_range_ends},
        {"ranges_without_end", d.counts.ranges_without_end},
        {"began_before_window", d.counts.began_before_window},
        {"overlapping_ranges", d.counts.overlapping_ranges},
        {"corrupt_records", d.counts.corrupt_records},
        {"buffer_bytes", d.counts.buffer_bytes},
        {"rejected_domain_names", d.counts.rejected_domain_names},
        {"domains_over_limit", d.counts.domains_over_limit},
        {"destroyed_domain_calls", d.counts.destroyed_domain_calls},
        {"foreign_domain_handles", d.counts.foreign_domain_handles},
        {"mstx_ranges_over_limit", d.counts.mstx_ranges_over_limit},
        {"device_unresolved", d.counts.device_unresolved},
        {"device_unpaired", d.counts.device_unpaired},
        {"short_ranges", d.counts.short_ranges},
        {"outside_window", d.counts.outside_window},
        {"evicted_bytes", d.counts.evicted_bytes},
        {"device_events", device_events}}},
  };
  if (nlohmann::json args = distributed_args(d, user); !args.is_null()) out["distributed_args"] = std::move(args);
  if (!d.steps.empty()) out["steps"] = {{"first", d.steps.front().id}, {"last", d.steps.back().id}};
  return out;
}

inline nlohmann::json render_metadata(const trace_data& d, const std::string& trace_id,
                                      const nlohmann::json& user = nlohmann::json::object()) {
  return render_metadata(d, d.events.size(), d.device_events.size(), trace_id, user);
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
