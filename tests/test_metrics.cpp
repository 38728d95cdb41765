// Live metrics: /metrics read over HTTP while the session runs, checked
// against what was recorded and against the trace of the same recording.
#include <npuprof/metrics.hpp>

#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <unordered_map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "metrics_support.hpp"
#include "simulated_acl.h"
#include "support.hpp"

namespace {

struct serving {
  static constexpr const char* name = "serving";
};

using namespace std::chrono_literals;
using labels = std::map<std::string, std::string>;

std::vector<test::sample> scrape(const std::string& address) {
  const test::http_response r = test::http_get(address, "/metrics");
  REQUIRE(r.status == 200);
  auto samples = test::parse_exposition(r.body);
  REQUIRE_MESSAGE(samples.has_value(), "not the text exposition format:\n" << r.body);
  // Prometheus refuses a scrape that has a label set twice.
  std::set<std::pair<std::string, std::map<std::string, std::string>>> seen;
  for (const test::sample& x : *samples) {
    const bool once = seen.emplace(x.name, x.labels).second;
    REQUIRE_MESSAGE(once, "a label set twice: " << x.name);
  }
  return *samples;
}

double value_or_zero(const std::vector<test::sample>& all, const std::string& name, const labels& l) {
  return test::value_of(all, name, l).value_or(0);
}

// Scrapes until `done` holds (at most `patience`); the last scrape.
template <class Done>
std::vector<test::sample> scrape_until(const std::string& address, Done&& done,
                                       std::chrono::milliseconds patience = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  std::vector<test::sample> s = scrape(address);
  while (!done(s) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
    s = scrape(address);
  }
  return s;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("/metrics holds a histogram per range name whose buckets hold the trace's durations, marks and counters") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.flush_interval_ms = 20;
  cfg.metrics.listen = "127.0.0.1:0";
  static const npuprof::registered_string<serving> prefill{"prefill"};
  npuprof::session s{cfg};
  s.start();
  const std::string address = s.metrics_address();
  REQUIRE(address.rfind("127.0.0.1:", 0) == 0);
  REQUIRE(address != "127.0.0.1:0");
  for (int i = 0; i < 20; ++i) {
    npuprof::scoped_range<serving> r{prefill};
    std::this_thread::sleep_for(2ms);
  }
  for (int i = 0; i < 3; ++i) {
    npuprof::scoped_range<serving> r{std::string("decode")};
    std::this_thread::sleep_for(20ms);
  }
  npuprof::range_id handed = 0;
  std::thread([&] { handed = npuprof::range_start<serving>("handed over"); }).join();
  std::this_thread::sleep_for(5ms);
  npuprof::range_end<serving>(handed);
  for (int i = 0; i < 7; ++i) npuprof::mark<serving>("token");
  for (int v : {5, 9, 3}) npuprof::counter<serving>("queue depth", v);
  npuprof::counter<serving>("load", 0.25);

  auto seen = [](const std::vector<test::sample>& m) {
    return value_or_zero(m, "npuprof_range_duration_seconds_count", {{"name", "handed over"}}) == 1 &&
           value_or_zero(m, "npuprof_counter_value", {{"name", "load"}}) == 0.25;
  };
  const auto m = scrape_until(address, seen);
  const auto t = test::load(s.stop());
  CHECK_FALSE(test::listening(address));

  // Every name, with its domain and its count.
  const std::map<std::string, double> counts = {{"prefill", 20}, {"decode", 3}, {"handed over", 1}};
  for (const auto& entry : counts) {
    const std::string& name = entry.first;
    const double n = entry.second;
    CAPTURE(name);
    CHECK(value_or_zero(m, "npuprof_range_duration_seconds_count", {{"domain", "serving"}, {"name", name}}) == n);
    CHECK(value_or_zero(m, "npuprof_range_duration_seconds_bucket",
                        {{"domain", "serving"}, {"name", name}, {"le", "+Inf"}}) == n);
  }
  CHECK(value_or_zero(m, "npuprof_marks_total", {{"domain", "serving"}, {"name", "token"}}) == 7);
  CHECK(value_or_zero(m, "npuprof_counter_value", {{"domain", "serving"}, {"name", "queue depth"}}) == 3);
  CHECK(value_or_zero(m, "npuprof_dropped_events_total", {}) == 0);
  CHECK(value_or_zero(m, "npuprof_unmatched_range_ends_total", {}) == 0);
  CHECK(value_or_zero(m, "npuprof_series_overflow_total", {}) == 0);
  CHECK(value_or_zero(m, "npuprof_buffer_bytes", {}) > 0);

  // Each bucket holds the ranges of the trace whose duration is at most its
  // bound; the sum is theirs.
  const std::vector<double> bounds = npuprof::metrics_endpoint::default_buckets();
  for (const auto& entry : counts) {
    const std::string& name = entry.first;
    const double n = entry.second;
    CAPTURE(name);
    std::vector<double> durations;
    for (const auto& e : t.named(name, "X")) durations.push_back(e["dur"].get<double>() * 1e-6);
    REQUIRE(durations.size() == static_cast<std::size_t>(n));
    double sum = 0;
    for (double d : durations) sum += d;
    CHECK(std::abs(value_or_zero(m, "npuprof_range_duration_seconds_sum", {{"name", name}}) - sum) < 1e-5 * n + 1e-7);
    for (double b : bounds) {
      const auto in =
          static_cast<double>(std::count_if(durations.begin(), durations.end(), [&](double d) { return d <= b; }));
      const auto le =
          test::value_of(m, "npuprof_range_duration_seconds_bucket", {{"name", name}, {"le", fmt::format("{}", b)}});
      REQUIRE_MESSAGE(le.has_value(), "no bucket le=" << b);
      CHECK_MESSAGE(*le == in, "le=" << b);
    }
  }
  CHECK(value_or_zero(m, "npuprof_range_duration_seconds_bucket", {{"name", "prefill"}, {"le", "0.001"}}) == 0);
  CHECK(value_or_zero(m, "npuprof_range_duration_seconds_bucket", {{"name", "decode"}, {"le", "0.01"}}) == 0);
}

TEST_CASE("hostile names are escaped and made valid UTF-8; past max_series names fold into name=\"other\", counted") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.metrics.listen = "127.0.0.1:0";
  cfg.metrics.max_series = 10;
  const std::vector<std::string> hostile = {"say \"hi\"", "back\\slash", "two\nlines", "bad \xff\xfe utf-8",
                                            "a}{b=\"c\",d"};
  npuprof::session s{cfg};
  s.start();
  for (const std::string& h : hostile) npuprof::scoped_range<serving> r{h};
  for (int i = 0; i < 50; ++i) npuprof::scoped_range<serving> r{"request " + std::to_string(i)};
  // Domains whose names differ only in invalid bytes share a label.
  npuprof::mark(npuprof::domain_by_name("d\xff"), "x");
  npuprof::mark(npuprof::domain_by_name("d\xfe"), "x");
  for (int i = 0; i < 12; ++i) npuprof::mark<serving>("mark " + std::to_string(i));
  // Past the cap, 64 domains get an "other" each, the rest share one.
  for (int d = 0; d < 80; ++d) npuprof::mark(npuprof::domain_by_name("domain " + std::to_string(d)), "late");
  const auto m = scrape_until(s.metrics_address(), [](const std::vector<test::sample>& m) {
    return value_or_zero(m, "npuprof_range_duration_seconds_count", {{"name", "other"}}) == 45 &&
           value_or_zero(m, "npuprof_marks_total", {{"domain", "(other domains)"}}) == 80 - 63 &&
           value_or_zero(m, "npuprof_marks_total", {{"domain", "d\xEF\xBF\xBD"}}) != 0;
  });
  s.stop();
  for (const std::string& h : hostile) {
    const std::string expected = npuprof::detail::valid_utf8(h);
    CHECK_MESSAGE(
        value_or_zero(m, "npuprof_range_duration_seconds_count", {{"domain", "serving"}, {"name", expected}}) == 1,
        expected);
  }
  CHECK(value_or_zero(m, "npuprof_range_duration_seconds_count", {{"name", "bad \xEF\xBF\xBD\xEF\xBF\xBD utf-8"}}) ==
        1);
  std::set<std::string> names;
  for (const test::sample& x : m) {
    if (x.name == "npuprof_range_duration_seconds_count") names.insert(x.labels.at("name"));
  }
  CHECK(names.size() == 11);  // the cap, and "other"
  for (int i = 0; i < 5; ++i) CHECK(names.count("request " + std::to_string(i)) == 1);
  CHECK(names.count("request 5") == 0);
  CHECK(value_or_zero(m, "npuprof_range_duration_seconds_count", {{"domain", "serving"}, {"name", "other"}}) == 45);
  CHECK(value_or_zero(m, "npuprof_marks_total", {{"name", "mark 8"}}) == 1);
  CHECK_FALSE(test::value_of(m, "npuprof_marks_total", {{"name", "mark 9"}}).has_value());
  CHECK(value_or_zero(m, "npuprof_marks_total", {{"domain", "serving"}, {"name", "other"}}) == 3);
  CHECK(value_or_zero(m, "npuprof_marks_total", {{"domain", "d\xEF\xBF\xBD"}, {"name", "x"}}) == 2);
  double marks = 0, mark_series = 0;
  for (const test::sample& x : m) {
    if (x.name != "npuprof_marks_total") continue;
    marks += x.value;
    ++mark_series;
  }
  CHECK(marks == 12 + 2 + 80);
  CHECK(mark_series == 10 + npuprof::detail::series_family::max_others + 1);
  CHECK(value_or_zero(m, "npuprof_marks_total", {{"domain", "domain 62"}, {"name", "other"}}) == 1);
  CHECK(value_or_zero(m, "npuprof_marks_total", {{"domain", "(other domains)"}, {"name", "other"}}) == 80 - 63);
  // 45 ranges, 3 marks of "serving" and the 80 domains' marks.
  CHECK(value_or_zero(m, "npuprof_series_overflow_total", {}) == 45 + 3 + 80);
}

TEST_CASE("a port in use is an error naming it; the endpoint stops with the session and listens again in the next") {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0);
  REQUIRE(::listen(fd, 4) == 0);
  socklen_t len = sizeof sa;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0);
  const std::string taken = "127.0.0.1:" + std::to_string(ntohs(sa.sin_port));

  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.metrics.listen = taken;
  {
    npuprof::session s{cfg};
    const std::string e = error_of([&] { s.start(); });
    CHECK_MESSAGE(e.find("cannot serve metrics on " + taken) != std::string::npos, e);
    CHECK_FALSE(s.running());
    CHECK(s.metrics_address().empty());
  }
  ::close(fd);

  // The port is free now: sessions one after another serve on it (a port
  // alone is on loopback).
  cfg.metrics.listen = taken.substr(taken.find(':') + 1);
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    npuprof::session s{cfg};
    s.start();
    CHECK(s.metrics_address() == taken);
    npuprof::mark<serving>("round");
    CHECK(test::http_get(taken, "/metrics").status == 200);
    s.stop();
    CHECK(s.metrics_address().empty());
    CHECK_FALSE(test::listening(taken));
  }
}

TEST_CASE("a fork() child closes its copy of the endpoint's socket: the parent's port is free when its session stops") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.metrics.listen = "127.0.0.1:" + std::to_string(test::free_port());
  {
    npuprof::session s{cfg};
    s.start();
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      std::this_thread::sleep_for(3s);  // outlives the parent's session
      ::_exit(0);
    }
    CHECK(test::http_get(s.metrics_address(), "/metrics").status == 200);
    s.stop();
    CHECK_FALSE(test::listening(cfg.metrics.listen));
    npuprof::session again{cfg};
    CHECK_NOTHROW(again.start());
    CHECK(test::http_get(again.metrics_address(), "/metrics").status == 200);
    again.stop();
    CHECK(WIFEXITED(test::child_status(child, 30)));
  }
}

TEST_CASE("ranges let go at the limit on open ranges are counted once, as not measured") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.metrics.listen = "127.0.0.1:0";
  cfg.buffer_size_kb = 64 * 1024;
  npuprof::session s{cfg};
  s.start();
  constexpr std::size_t n = npuprof::detail::live_metrics::max_open_ranges + 4000;
  std::vector<npuprof::range_id> ids;
  for (std::size_t i = 0; i < n; ++i) ids.push_back(npuprof::range_start<serving>("held"));
  std::this_thread::sleep_for(50ms);  // the begins are read before the ends
  for (npuprof::range_id id : ids) npuprof::range_end<serving>(id);
  npuprof::range_end<serving>(npuprof::range_id{12345});  // a caller's mistake
  const auto m = scrape_until(s.metrics_address(), [&](const std::vector<test::sample>& m) {
    return value_or_zero(m, "npuprof_range_duration_seconds_count", {{"name", "held"}}) +
                   value_or_zero(m, "npuprof_ranges_not_measured_total", {}) ==
               static_cast<double>(n) &&
           value_or_zero(m, "npuprof_unmatched_range_ends_total", {}) >= 1;
  });
  std::this_thread::sleep_for(100ms);  // ends waiting for their begin expire
  const auto later = scrape(s.metrics_address());
  s.stop();
  CHECK(value_or_zero(m, "npuprof_ranges_not_measured_total", {}) == npuprof::detail::live_metrics::max_open_ranges);
  CHECK(value_or_zero(later, "npuprof_range_duration_seconds_count", {{"name", "held"}}) +
            value_or_zero(later, "npuprof_ranges_not_measured_total", {}) ==
        static_cast<double>(n));
  CHECK(value_or_zero(later, "npuprof_unmatched_range_ends_total", {}) == 1);
}

TEST_CASE("a range shows in /metrics within two flush intervals of its end") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.flush_interval_ms = 100;
  cfg.metrics.listen = "127.0.0.1:0";
  npuprof::session s{cfg};
  s.start();
  std::vector<double> latencies_ms;
  for (int i = 1; i <= 5; ++i) {
    { npuprof::scoped_range<serving> r{"watched"}; }
    const auto ended = std::chrono::steady_clock::now();
    scrape_until(
        s.metrics_address(),
        [&](const std::vector<test::sample>& m) {
          return value_or_zero(m, "npuprof_range_duration_seconds_count", {{"name", "watched"}}) == i;
        },
        5s);
    latencies_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - ended).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(37 * i));  // ends fall anywhere in the interval
  }
  s.stop();
  std::sort(latencies_ms.begin(), latencies_ms.end());
  MESSAGE("ms from a range's end to /metrics showing it: " << latencies_ms.front() << " to " << latencies_ms.back());
  // Two intervals, and room for one scrape and a busy machine's scheduling.
  CHECK(latencies_ms[latencies_ms.size() / 2] <= 2 * 100 + 100);
  CHECK(latencies_ms.back() <= 2 * 100 + 400);
}

TEST_CASE("a flight recorder's ranges are measured, and the device part of stream-tied ranges by stream") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.flight.enabled = true;
  cfg.flight.memory_mb = 16;
  cfg.backend = "acl";
  cfg.acl_library = NPUPROF_TEST_SIMULATED_ACL;
  cfg.metrics.listen = "127.0.0.1:0";
  aclrtStream stream = nullptr;
  REQUIRE(aclrtCreateStream(&stream) == ACL_SUCCESS);
  npuprof::name_stream(stream, "compute \"0\"");
  npuprof::session s{cfg};
  s.start();
  for (int i = 0; i < 10; ++i) {
    npuprof::scoped_range<serving> r{"kernel", stream};
    npuprof_sim_launch_kernel(stream, 3000);
  }
  npuprof::range_id id = npuprof::range_start<serving>("copy", stream);
  npuprof_sim_launch_kernel(stream, 1000);
  npuprof::range_end<serving>(id, stream);
  const auto m = scrape_until(s.metrics_address(), [](const std::vector<test::sample>& m) {
    return value_or_zero(m, "npuprof_device_duration_seconds_count", {{"name", "kernel"}}) == 10 &&
           value_or_zero(m, "npuprof_device_duration_seconds_count", {{"name", "copy"}}) == 1;
  });
  const auto t = test::load(s.stop());
  REQUIRE(aclrtDestroyStream(stream) == ACL_SUCCESS);
  const labels kernel = {{"domain", "serving"}, {"name", "kernel"}, {"stream", "compute \"0\""}};
  CHECK(value_or_zero(m, "npuprof_range_duration_seconds_count", {{"name", "kernel"}}) == 10);
  CHECK(value_or_zero(m, "npuprof_device_duration_seconds_count", kernel) == 10);
  CHECK(value_or_zero(m, "npuprof_device_duration_seconds_count", {{"name", "copy"}, {"stream", "compute \"0\""}}) ==
        1);
  // Each kernel ran 3 ms on the simulated device: all in (2.5 ms, 5 ms], or
  // later when the machine is slow.
  auto bucket = [&](const char* le) {
    labels l = kernel;
    l["le"] = le;
    return value_or_zero(m, "npuprof_device_duration_seconds_bucket", l);
  };
  CHECK(bucket("0.0025") == 0);
  CHECK(bucket("+Inf") == 10);
  const double sum = value_or_zero(m, "npuprof_device_duration_seconds_sum", kernel);
  CHECK(sum >= 0.030 * 0.99);
  // The trace of the same recording has those device slices.
  CHECK(t.count("kernel", "X") >= 10);
}

TEST_CASE("the table of ranges in flight agrees with std::unordered_map through random puts and takes") {
  npuprof::detail::id_table<std::uint64_t> table;
  std::unordered_map<std::uint64_t, std::uint64_t> model;
  std::mt19937_64 rng(42);
  for (int i = 0; i < 400'000; ++i) {
    // Few distinct ids, so that probe runs are long and takes hit them.
    const std::uint64_t id = 1 + rng() % 5000 + ((rng() % 4) << 40);
    if (rng() % 3 != 0) {
      table.put(id, static_cast<std::uint64_t>(i));
      model[id] = static_cast<std::uint64_t>(i);
    } else {
      std::uint64_t got = 0;
      const bool found = table.take(id, got);
      auto it = model.find(id);
      REQUIRE(found == (it != model.end()));
      if (found) {
        REQUIRE(got == it->second);
        model.erase(it);
      }
    }
    REQUIRE(table.size() == model.size());
  }
  for (const auto& entry : model) {
    std::uint64_t got = 0;
    REQUIRE(table.take(entry.first, got));
    CHECK(got == entry.second);
  }
  CHECK(table.size() == 0);
}
