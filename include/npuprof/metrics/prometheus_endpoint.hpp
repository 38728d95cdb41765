// The live metrics endpoint, served with prometheus-cpp: each scrape of
// /metrics copies what the session's live metrics hold and writes it in
// Prometheus' text format (prometheus-cpp escapes label values; npuprof made
// them valid UTF-8).
#pragma once

#include "../marker/abi.hpp"

#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/exposer.h>
#include <prometheus/metric_family.h>

#include "../engine/config_values.hpp"
#include "live_metrics.hpp"
#include "server_slot.hpp"
#include "../error.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// What a scrape of /metrics shows: the metric families of live_metrics.
class metrics_families final : public prometheus::Collectable {
 public:
  explicit metrics_families(std::shared_ptr<const live_metrics> metrics) : metrics_(std::move(metrics)) {}

  std::vector<prometheus::MetricFamily> Collect() const override {
    const metrics_view v = metrics_->view();
    std::vector<prometheus::MetricFamily> out;
    out.push_back(histograms("npuprof_range_duration_seconds", "Durations of host ranges, by domain and name", v.ranges,
                             v.bounds, false));
    out.push_back(histograms("npuprof_device_duration_seconds",
                             "Device durations of stream-tied ranges, by domain, name and stream", v.device, v.bounds,
                             true));
    out.push_back(
        values("npuprof_marks_total", "Marks recorded, by domain and name", prometheus::MetricType::Counter, v.marks));
    out.push_back(values("npuprof_counter_value", "Last sample of each counter, by domain and name",
                         prometheus::MetricType::Gauge, v.counters));
    const metrics_health& h = v.health;
    out.push_back(single("npuprof_dropped_events_total", "Events dropped because the buffers were full",
                         prometheus::MetricType::Counter, static_cast<double>(h.dropped_events)));
    out.push_back(single("npuprof_buffer_bytes", "Bytes of event buffers allocated", prometheus::MetricType::Gauge,
                         static_cast<double>(h.buffer_bytes)));
    out.push_back(single("npuprof_unmatched_range_ends_total", "Range ends whose begin was not found",
                         prometheus::MetricType::Counter, static_cast<double>(h.unmatched_range_ends)));
    out.push_back(single("npuprof_series_overflow_total",
                         "Observations folded into name=\"other\" because a metric reached max_series",
                         prometheus::MetricType::Counter, static_cast<double>(h.series_overflow)));
    out.push_back(single("npuprof_ranges_not_measured_total",
                         "Ranges left out of the histograms: too many in flight, or device times never resolved",
                         prometheus::MetricType::Counter, static_cast<double>(h.ranges_not_measured)));
    return out;
  }

 private:
  static std::vector<prometheus::ClientMetric::Label> labels(const metric_series& s, bool with_stream) {
    std::vector<prometheus::ClientMetric::Label> l = {{"domain", s.domain}, {"name", s.name}};
    if (with_stream) l.push_back({"stream", s.stream});
    return l;
  }

  static prometheus::MetricFamily histograms(const char* name, const char* help, const std::vector<metric_series>& all,
                                             const std::vector<double>& bounds, bool with_stream) {
    prometheus::MetricFamily f{name, help, prometheus::MetricType::Histogram, {}};
    for (const metric_series& s : all) {
      prometheus::ClientMetric& m = f.metric.emplace_back();
      m.label = labels(s, with_stream);
      m.histogram.sample_count = s.count;
      m.histogram.sample_sum = s.value;
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < s.buckets.size(); ++i) {
        cumulative += s.buckets[i];
        const double le = i < bounds.size() ? bounds[i] : std::numeric_limits<double>::infinity();
        m.histogram.bucket.push_back({cumulative, le});
      }
    }
    return f;
  }

  static prometheus::MetricFamily values(const char* name, const char* help, prometheus::MetricType type,
                                         const std::vector<metric_series>& all) {
    prometheus::MetricFamily f{name, help, type, {}};
    for (const metric_series& s : all) {
      prometheus::ClientMetric& m = f.metric.emplace_back();
      m.label = labels(s, false);
      if (type == prometheus::MetricType::Counter) {
        m.counter.value = static_cast<double>(s.count);
      } else {
        m.gauge.value = s.value;
      }
    }
    return f;
  }

  static prometheus::MetricFamily single(const char* name, const char* help, prometheus::MetricType type,
                                         double value) {
    prometheus::MetricFamily f{name, help, type, {}};
    prometheus::ClientMetric& m = f.metric.emplace_back();
    (type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value) = value;
    return f;
  }

  std::shared_ptr<const live_metrics> metrics_;
};

/// Serves /metrics on the configured address until destroyed. civetweb
/// serves `threads` connections at a time and gives each at most
/// `timeout_ms` to send its request and take the answer, so that clients
/// that trickle bytes hold up scrapes for seconds, not minutes.
class prometheus_endpoint final : public metrics_server {
 public:
  prometheus_endpoint(const metrics_endpoint& settings, std::shared_ptr<const live_metrics> metrics) {
    std::string host;
    unsigned port = 0;
    split_listen(settings.listen, host, port);
    try {
      exposer_ = std::make_unique<prometheus::Exposer>(
          std::vector<std::string>{"listening_ports", host + ":" + std::to_string(port), "num_threads",
                                   std::to_string(threads), "request_timeout_ms", std::to_string(timeout_ms)});
    } catch (const std::exception&) {
      throw error("npuprof: cannot serve metrics on " + settings.listen +
                  ": the address is in use or cannot be listened on (metrics.listen, NPUPROF_METRICS_LISTEN)");
    }
    families_ = std::make_shared<metrics_families>(std::move(metrics));
    exposer_->RegisterCollectable(families_);
    const std::vector<int> ports = exposer_->GetListeningPorts();
    port_ = ports.empty() ? port : static_cast<unsigned>(ports.front());
    address_ = host + ":" + std::to_string(port_);
  }

  std::string address() const override { return address_; }

  void abandon_in_child() noexcept override {
    std::vector<int> fds;
    if (DIR* d = ::opendir("/proc/self/fd")) {
      while (const dirent* e = ::readdir(d)) {
        if (e->d_name[0] != '.') fds.push_back(std::atoi(e->d_name));
      }
      ::closedir(d);
    }
    for (int fd : fds) {
      sockaddr_storage sa{};
      socklen_t len = sizeof sa;
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) continue;
      unsigned port = 0;
      if (sa.ss_family == AF_INET) port = ntohs(reinterpret_cast<const sockaddr_in&>(sa).sin_port);
      if (sa.ss_family == AF_INET6) port = ntohs(reinterpret_cast<const sockaddr_in6&>(sa).sin6_port);
      if (port == port_) ::close(fd);  // the listening socket, and connections it accepted
    }
  }

  static constexpr int threads = 4;
  static constexpr int timeout_ms = 10'000;

 private:
  unsigned port_ = 0;
  std::shared_ptr<metrics_families> families_;
  std::unique_ptr<prometheus::Exposer> exposer_;  // destroyed first: no scrape outlives families_
  std::string address_;
};

inline std::unique_ptr<metrics_server> make_prometheus_endpoint(const metrics_endpoint& settings,
                                                                std::shared_ptr<const live_metrics> metrics) {
  return std::make_unique<prometheus_endpoint>(settings, std::move(metrics));
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
