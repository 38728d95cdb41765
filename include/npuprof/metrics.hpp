// Live Prometheus metrics (config key `metrics`). Include this in the file
// that defines NPUPROF_IMPLEMENTATION and link prometheus-cpp's core and pull libraries
// (meson: npuprof_metrics_dep, or -lprometheus-cpp-pull -lprometheus-cpp-core);
// a program that does not include it needs no prometheus-cpp, and asking it
// for metrics is an error at session::start().
//
//     #include <npuprof/metrics.hpp>
//     npuprof::config cfg = npuprof::config::from_env();
//     cfg.metrics.listen = "127.0.0.1:9464";
//     npuprof::session s{cfg};
//     s.start();  // curl http://127.0.0.1:9464/metrics
#pragma once

#include "metrics/server_slot.hpp"
#include "metrics/prometheus_endpoint.hpp"
#include "session.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Installs the endpoint when the program starts.
inline const bool metrics_server_installed = (installed_metrics_server() = &make_prometheus_endpoint, true);

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
