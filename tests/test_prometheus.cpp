// A real Prometheus server scrapes this program's live metrics every second;
// the test asks Prometheus' HTTP API what it stored and checks it against
// what was recorded and against the trace of the same recording. Loopback
// only; every wait is bounded. Without the prometheus binary the test is
// skipped (exit 77), except in CI, where that is a failure.
#include <npuprof/metrics.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "metrics_support.hpp"
#include "simulated_acl.h"
#include "support.hpp"

extern char** environ;

namespace {

struct serving {
  static constexpr const char* name = "serving";
};

using namespace std::chrono_literals;

std::string find_prometheus() {
  if (const char* p = std::getenv("NPUPROF_TEST_PROMETHEUS"); p != nullptr && *p != '\0') return p;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  std::size_t from = 0;
  while (from <= dirs.size()) {
    const std::size_t to = std::min(dirs.find(':', from), dirs.size());
    const std::string candidate = dirs.substr(from, to - from) + "/prometheus";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    from = to + 1;
  }
  return {};
}

std::string url_encoded(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

/// A Prometheus server on 127.0.0.1 that scrapes `target` every second,
/// stopped when this object goes.
class prometheus_server {
 public:
  prometheus_server(const std::string& binary, const test::temp_dir& dir, const std::string& target)
      : address_("127.0.0.1:" + std::to_string(test::free_port())), log_(dir.path / "prometheus.log") {
    const auto config = dir.path / "prometheus.yml";
    std::ofstream(config) << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                          << "scrape_configs:\n  - job_name: npuprof\n    static_configs:\n"
                          << "      - targets: ['" << target << "']\n";
    const std::vector<std::string> args = {binary, "--config.file=" + config.string(),
                                           "--storage.tsdb.path=" + (dir.path / "tsdb").string(),
                                           "--web.listen-address=" + address_, "--log.level=warn"};
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, 1, 2);
    const int err = posix_spawn(&pid_, binary.c_str(), &files, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    REQUIRE_MESSAGE(err == 0, "cannot start " << binary);
  }
  ~prometheus_server() {
    ::kill(pid_, SIGTERM);
    if (test::child_status(pid_, 20) == -1) MESSAGE("prometheus did not stop on SIGTERM");
  }

  /// Waits (bounded) until the server answers as ready.
  bool ready(std::chrono::seconds patience) const {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < deadline) {
      if (test::http_get(address_, "/-/ready", 2s).status == 200) return true;
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }

  /// Evaluates queries at this time (Unix seconds; 0: now). Once the
  /// program stops serving, Prometheus marks its series stale: what it
  /// stored is asked for as of before.
  void as_of(double unix_seconds) { at_ = unix_seconds; }

  /// The vector an instant query gives, as (labels, value) rows.
  std::vector<std::pair<test::json, double>> query(const std::string& promql) const {
    std::string path = "/api/v1/query?query=" + url_encoded(promql);
    if (at_ > 0) path += fmt::format("&time={:.3f}", at_);
    const test::http_response r = test::http_get(address_, path, 10s);
    REQUIRE_MESSAGE(r.status == 200, promql << ": HTTP " << r.status << " " << r.body);
    const test::json j = test::json::parse(r.body);
    REQUIRE(j["status"] == "success");
    std::vector<std::pair<test::json, double>> rows;
    for (const test::json& row : j["data"]["result"]) {
      rows.emplace_back(row["metric"], std::stod(row["value"][1].get<std::string>()));
    }
    return rows;
  }

  /// The one value of `promql`, or -1 when it gives no row.
  double value(const std::string& promql) const {
    const auto rows = query(promql);
    return rows.size() == 1 ? rows[0].second : -1;
  }

  /// Waits (bounded) until `promql` gives `want`.
  bool wait_for(const std::string& promql, double want, std::chrono::seconds patience = 60s) const {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (std::chrono::steady_clock::now() < deadline) {
      if (value(promql) == want) return true;
      std::this_thread::sleep_for(250ms);
    }
    return false;
  }

  std::string log() const {
    std::ifstream in(log_);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  pid_t pid_ = -1;
  double at_ = 0;
  std::string address_;
  test::fs::path log_;
};

}  // namespace

TEST_CASE("a real Prometheus scrapes the live metrics: counts, buckets, the series cap and the device histogram") {
  const std::string binary = find_prometheus();
  if (binary.empty()) {
    if (std::getenv("CI") != nullptr) FAIL("no prometheus binary in CI: .ci/run installs the prometheus package");
    std::printf("SKIPPED: no prometheus binary on PATH (Debian: prometheus); set NPUPROF_TEST_PROMETHEUS\n");
    std::exit(77);
  }
  test::temp_dir dir, out;
  auto cfg = test::config_in(out);
  cfg.flush_interval_ms = 20;
  cfg.backend = "acl";
  cfg.acl_library = NPUPROF_TEST_SIMULATED_ACL;
  cfg.metrics.listen = "127.0.0.1:0";
  cfg.metrics.max_series = 1000;
  aclrtStream stream = nullptr;
  REQUIRE(aclrtCreateStream(&stream) == ACL_SUCCESS);
  npuprof::name_stream(stream, "compute");
  static const npuprof::registered_string<serving> prefill{"prefill"}, decode{"decode"};

  npuprof::session s{cfg};
  s.start();
  prometheus_server prom(binary, dir, s.metrics_address());
  REQUIRE_MESSAGE(prom.ready(60s), "prometheus did not become ready:\n" << prom.log());
  REQUIRE_MESSAGE(prom.wait_for("up{job=\"npuprof\"}", 1), "prometheus does not scrape npuprof:\n" << prom.log());

  // Half the prefills, scraped, then the rest: rate() has an increase to see.
  auto prefills = [&](int n) {
    for (int i = 0; i < n; ++i) {
      npuprof::scoped_range<serving> r{prefill};
      std::this_thread::sleep_for(2ms);
    }
  };
  prefills(50);
  REQUIRE(prom.wait_for("npuprof_range_duration_seconds_count{name=\"prefill\"}", 50));
  prefills(50);
  for (int i = 0; i < 10; ++i) {
    npuprof::scoped_range<serving> r{decode};
    std::this_thread::sleep_for(20ms);
  }
  for (int i = 0; i < 5; ++i) {
    npuprof::scoped_range<serving> r{"kernel", stream};
    npuprof_sim_launch_kernel(stream, 3000);
  }
  for (int i = 0; i < 5000; ++i) npuprof::scoped_range<serving> r{"request " + std::to_string(i)};
  // 1000 series: prefill, decode, kernel and 997 requests; 4003 fold into "other".
  REQUIRE_MESSAGE(prom.wait_for("npuprof_series_overflow_total", 4003), prom.log());
  REQUIRE(prom.wait_for("npuprof_range_duration_seconds_count{name=\"prefill\"}", 100));
  REQUIRE(prom.wait_for("npuprof_device_duration_seconds_count{name=\"kernel\"}", 5));
  prom.as_of(static_cast<double>(npuprof::wall_ns()) * 1e-9);
  const auto t = test::load(s.stop());
  REQUIRE(aclrtDestroyStream(stream) == ACL_SUCCESS);

  CHECK(prom.value("npuprof_range_duration_seconds_count{domain=\"serving\",name=\"decode\"}") == 10);
  CHECK(prom.value("npuprof_range_duration_seconds_count{name=\"other\"}") == 4003);
  CHECK(prom.value("count(npuprof_range_duration_seconds_count)") == 1001);
  CHECK(prom.value("npuprof_dropped_events_total") == 0);

  // Each stored bucket holds the trace's ranges of at most its bound.
  for (const char* name : {"prefill", "decode"}) {
    CAPTURE(name);
    std::vector<double> durations;
    for (const auto& e : t.named(name, "X")) durations.push_back(e["dur"].get<double>() * 1e-6);
    const auto buckets = prom.query(fmt::format("npuprof_range_duration_seconds_bucket{{name=\"{}\"}}", name));
    REQUIRE(buckets.size() == npuprof::metrics_endpoint::default_buckets().size() + 1);
    for (const auto& row : buckets) {
      const std::string le = row.first["le"];
      const double count = row.second;
      const double bound = le == "+Inf" ? HUGE_VAL : std::stod(le);
      const auto in = std::count_if(durations.begin(), durations.end(), [&](double d) { return d <= bound; });
      CHECK_MESSAGE(count == static_cast<double>(in), "le=" << le);
    }
  }
  CHECK(prom.value("npuprof_range_duration_seconds_bucket{name=\"prefill\",le=\"0.001\"}") == 0);
  CHECK(prom.value("npuprof_range_duration_seconds_bucket{name=\"decode\",le=\"0.01\"}") == 0);

  // The device part of the stream-tied kernels, 3 ms each on the simulated device.
  CHECK(prom.value("npuprof_device_duration_seconds_count{domain=\"serving\",name=\"kernel\",stream=\"compute\"}") ==
        5);
  CHECK(prom.value("npuprof_device_duration_seconds_bucket{name=\"kernel\",le=\"0.0025\"}") == 0);
  CHECK(prom.value("npuprof_device_duration_seconds_bucket{name=\"kernel\",le=\"+Inf\"}") == 5);

  // README's dashboard query: p99 of prefill over the last minute.
  const double p99 = prom.value(
      "histogram_quantile(0.99, sum by (le) (rate(npuprof_range_duration_seconds_bucket{name=\"prefill\"}[1m])))");
  MESSAGE("p99 of prefill from Prometheus: " << p99 * 1e3 << " ms");
  CHECK(p99 > 0.001);
  CHECK(p99 <= 0.060);
}
