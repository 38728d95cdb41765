// Where the metrics endpoint plugs in. A session with `metrics` set starts
// the installed server; <npuprof/metrics.hpp> installs it, so that a program
// that never asks for metrics needs no prometheus-cpp to compile or link.
#pragma once

#include "../marker/abi.hpp"

#include <memory>
#include <string>

#include "../metrics_endpoint.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

class live_metrics;

/// A running endpoint: it serves until it is destroyed.
class metrics_server {
 public:
  virtual ~metrics_server() = default;
  /// "host:port" it listens on (the port it took, for port 0).
  virtual std::string address() const = 0;
  /// In a fork() child, whose copy of the server has no threads: closes
  /// the child's copies of its sockets, so that the port stays the
  /// parent's alone. The object is then let go without being destroyed.
  virtual void abandon_in_child() noexcept = 0;
};

/// Starts serving `metrics` as `settings` say; throws npuprof::error naming
/// the address when it cannot listen there.
using metrics_server_maker = std::unique_ptr<metrics_server> (*)(const metrics_endpoint& settings,
                                                                 std::shared_ptr<const live_metrics> metrics);

/// The installed maker; null until <npuprof/metrics.hpp> is part of the
/// program.
inline metrics_server_maker& installed_metrics_server() noexcept {
  static metrics_server_maker maker = nullptr;
  return maker;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
