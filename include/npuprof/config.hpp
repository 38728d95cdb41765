// Session configuration: from code, from a JSON file (NPUPROF_CONFIG) and from
// the environment, with the key names users of torch_npu's profiler know.
#pragma once

#include "marker/abi.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "error.hpp"
#include "flight_recorder.hpp"
#include "metrics_endpoint.hpp"
#include "schedule.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

/// Everything a session can be told. Defaults suit a developer's run: all
/// markers on, output in the current directory.
struct config {
  /// The `mstx` switch (alias `msprof_tx`): markers record at all.
  bool mstx = true;
  /// `mstx_domain_include`: only these domains record (wins over exclude).
  std::vector<std::string> domain_include;
  /// `mstx_domain_exclude`: these domains do not record.
  std::vector<std::string> domain_exclude;
  /// `output_dir`: where output directories are created.
  std::string output_dir = ".";
  /// `worker_name`: first part of the output directory name (default: host name).
  std::string worker_name;
  /// `buffer_size_kb`: cap on the memory of all event buffers together; events
  /// past it are dropped and counted.
  std::size_t buffer_size_kb = 256 * 1024;
  /// `chunk_size_kb`: size of one buffer chunk, the unit threads take and hand over.
  std::size_t chunk_size_kb = 16;
  /// `flush_interval_ms`: how often the session collects full chunks.
  unsigned flush_interval_ms = 10;
  /// `backend`: "auto" (the Ascend runtime when one is found, else host
  /// only), "acl" (the Ascend runtime; says so when it falls back) or "host".
  std::string backend = "auto";
  /// `acl_library`: the Ascend runtime to load (default: NPUPROF_ACL_LIBRARY,
  /// else $ASCEND_HOME_PATH/lib64/libascendcl.so, else the loader's search).
  std::string acl_library;
  /// `device_events_per_stream`: device events pooled per stream, rounded
  /// down to a power of two; a marker finding its stream's pool empty records
  /// host-only and is counted.
  std::uint32_t device_events_per_stream = 256;
  /// `device_wait_ms`: how long stop() waits for device events in flight.
  unsigned device_wait_ms = 3000;
  /// `mstx_forward`: with the acl backend, also pass markers on to the
  /// toolkit's libms_tools_ext.so when one is found (msprof keeps seeing them).
  bool mstx_forward = true;
  /// `rank`, `world_size` (environment: RANK, LOCAL_RANK, WORLD_SIZE): this
  /// process's place in a distributed job, -1 when not part of one. The rank
  /// goes into the output directory name and the metadata.
  int rank = -1;
  int local_rank = -1;
  int world_size = -1;
  /// Gives the session's trace id (e.g. the id of a request or a job);
  /// without it one is generated.
  std::function<std::string()> trace_id_callback;
  /// `schedule`: which steps record (see npuprof::schedule); without one,
  /// everything between start() and stop() records.
  std::optional<::npuprof::schedule> schedule;
  /// Called with each output directory the session writes (schedule cycles,
  /// dumps, stop), on the thread that wrote it.
  std::function<void(const std::filesystem::path&)> on_trace_ready;
  /// `flight_recorder`: always-on mode, see npuprof::flight_recorder.
  ::npuprof::flight_recorder flight;
  /// `min_duration_us`: ranges shorter than this are left out of the output
  /// (and counted), so an always-on trace keeps the slow ones.
  std::uint64_t min_duration_us = 0;
  /// `host_sys`: host counters to sample ("cpu", "mem", "disk", "network"),
  /// every `host_sys_interval_ms`, as counter tracks of the "host_sys" domain.
  std::vector<std::string> host_sys;
  unsigned host_sys_interval_ms = 100;
  /// `export_type`: what each output directory holds, "text" (trace_view.json,
  /// profiler_metadata.json, range_summary.csv) and/or "db" (an SQLite
  /// database laid out as msprof's; needs <npuprof/database.hpp>). An
  /// unknown value is warned about and left out; none left means "text".
  std::vector<std::string> export_type = {"text"};
  /// `metrics`: live Prometheus metrics while the session runs, see
  /// npuprof::metrics_endpoint; off by default.
  ::npuprof::metrics_endpoint metrics;
  /// `mstx_library`: that library (default: NPUPROF_MSTX_LIBRARY, else
  /// $ASCEND_HOME_PATH/lib64/libms_tools_ext.so, else the loader's search).
  std::string mstx_library;

  /// Where the values came from ("defaults", a file, the environment).
  std::string source = "defaults";
  /// Problems that did not stop loading (unknown keys, conflicting filters).
  std::vector<std::string> warnings;

  /// Defaults, then the file named by NPUPROF_CONFIG (if set), then the
  /// NPUPROF_* environment variables. Throws config_error.
  static config from_env();
  /// Reads a JSON config file. Throws config_error naming the file and key.
  static config from_file(const std::string& path);
  /// Reads JSON text; `source` names it in messages.
  static config from_json(std::string_view text, const std::string& source = "<json>");

  /// Applies the NPUPROF_* environment variables on top of this config.
  void apply_env();
  /// Checks value ranges; throws config_error.
  void validate() const;
  /// The config as JSON, as written to the metadata.
  nlohmann::json to_json() const;
};

NPUPROF_ABI_END
}  // namespace npuprof
