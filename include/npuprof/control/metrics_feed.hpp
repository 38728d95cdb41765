// Live metrics while a session runs: the endpoint that serves them, and what
// the drainer feeds them after each flush.
#pragma once

#include "../marker/abi.hpp"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "../backend/device_backend.hpp"
#include "../clock.hpp"
#include "../engine/chunk_pool.hpp"
#include "../engine/state.hpp"
#include "../error.hpp"
#include "../metrics/live_metrics.hpp"
#include "../metrics/server_slot.hpp"
#include "../metrics_endpoint.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A session's live metrics and their endpoint; empty when metrics are off.
class metrics_feed {
 public:
  /// What open() started, not yet the session's.
  struct opened {
    std::shared_ptr<live_metrics> metrics;
    std::unique_ptr<metrics_server> server;
  };

  /// Throws config_error when `settings` ask for metrics and the program has
  /// no endpoint (<npuprof/metrics.hpp> is not part of it).
  static void check_available(const metrics_endpoint& settings) {
    if (settings.enabled() && installed_metrics_server() == nullptr) {
      throw config_error(
          "metrics need the metrics endpoint: include <npuprof/metrics.hpp> in the file that defines "
          "NPUPROF_IMPLEMENTATION and link prometheus-cpp (meson: npuprof_metrics_dep)");
    }
  }

  /// Starts serving as `settings` ask (nothing when metrics are off); throws
  /// npuprof::error naming the address when it cannot listen there.
  static opened open(const metrics_endpoint& settings) {
    opened o;
    if (!settings.enabled()) return o;
    o.metrics = std::make_shared<live_metrics>(settings);
    o.server = installed_metrics_server()(settings, o.metrics);
    return o;
  }

  /// Takes over what open() started, for a run that began at `start_ticks`.
  void attach(opened o, std::uint64_t start_ticks, double ns_per_tick) {
    metrics_ = std::move(o.metrics);
    server_ = std::move(o.server);
    if (metrics_) metrics_->calibrate(start_ticks, ns_per_tick);
    std::lock_guard<std::mutex> lock(address_mutex_);
    address_ = server_ ? server_->address() : std::string();
  }

  /// What records are metered with; null when metrics are off.
  live_metrics* get() const noexcept { return metrics_.get(); }

  /// Before a flush drains (under the control lock): the clock map, wider
  /// with each flush, for a run that began at `start_ticks`.
  void calibrate(std::uint64_t start_ticks) {
    if (metrics_) metrics_->calibrate(start_ticks, clock_calibration(state().origin, sample_clock()).ns_per_tick());
  }

  /// After a flush drained the full chunks (under the control lock): what
  /// live threads published since, device times resolved, and the session's
  /// health. `drops_taken`: drops already taken from the threads' counts.
  void feed(device_backend* device, std::uint64_t drops_taken) {
    if (!metrics_) return;
    process_state& st = state();
    metrics_->read_live();
    if (device != nullptr) metrics_->resolve_device(*device, steady_ns());
    std::uint64_t dropped = drops_taken + markers().stats.unregistered_drops.load(std::memory_order_relaxed);
    for (auto& [tid, n] : st.threads.peek_drops_by_thread()) dropped += n;
    metrics_->end_flush(dropped, pool().bytes_allocated());
  }

  /// Stops the endpoint; the metrics go with close_metrics(), once records
  /// are no longer metered with them.
  void close_endpoint() {
    server_.reset();
    std::lock_guard<std::mutex> lock(address_mutex_);
    address_.clear();
  }
  void close_metrics() { metrics_.reset(); }

  /// In a fork() child: the endpoint's threads and port are the parent's.
  void abandon_in_child() noexcept {
    if (server_) server_->abandon_in_child();
    (void)server_.release();
  }

  /// "host:port" the endpoint serves, or "" when none does.
  std::string address() const {
    std::lock_guard<std::mutex> lock(address_mutex_);
    return address_;
  }

 private:
  std::shared_ptr<live_metrics> metrics_;
  std::unique_ptr<metrics_server> server_;
  mutable std::mutex address_mutex_;
  std::string address_;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
