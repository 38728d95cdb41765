// The live metrics endpoint's settings (config key `metrics`).
#pragma once

#include "marker/abi.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace npuprof {
NPUPROF_ABI_BEGIN

/// `metrics`: while a session runs, serve Prometheus metrics of its markers
/// at http://<listen>/metrics: a latency histogram per range name, the
/// device part of stream-tied ranges, marks, counters and the session's own
/// health. Fed by npuprof's background thread from what it drains: recording
/// threads pay nothing for it. Needs <npuprof/metrics.hpp> (prometheus-cpp).
///
///     cfg.metrics.listen = "127.0.0.1:9464";  // JSON: "metrics": {"listen": "127.0.0.1:9464"}
struct metrics_endpoint {
  /// `listen`: "host:port" to serve on, or a port alone for loopback
  /// (127.0.0.1); empty: no metrics (the default). Port 0 takes a free port
  /// (session::metrics_address() tells which).
  std::string listen;
  /// `max_series`: most label sets of each metric; names past it are folded
  /// into name="other" and counted by npuprof_series_overflow_total.
  std::size_t max_series = 1000;
  /// `buckets`: histogram bucket upper bounds in seconds, increasing: from
  /// a microsecond (kernels) to a minute (requests) by default.
  std::vector<double> buckets = default_buckets();

  /// Whether metrics are served: `listen` is set.
  bool enabled() const noexcept { return !listen.empty(); }

  /// 1, 2.5 and 5 per decade from 1 us to 10 s, then 30 s and 60 s.
  static std::vector<double> default_buckets() {
    return {1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3,
            1e-2, 2.5e-2, 5e-2, 0.1,  0.25,   0.5,  1,    2.5,    5,    10,   30,     60};
  }
};

NPUPROF_ABI_END
}  // namespace npuprof
