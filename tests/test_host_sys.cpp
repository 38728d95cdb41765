// Host system counters: each is checked against what the test itself does
// (burn CPU, allocate, write a file, send over loopback).
#include "support.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using test::json;

struct sample {
  std::int64_t ts;
  double value;
};

std::vector<sample> series(const test::trace& t, const std::string& name) {
  std::vector<sample> out;
  for (const json& e : t.phase("C")) {
    if (e["name"] == name) out.push_back({test::to_ns(e["ts"]), e["args"][name].get<double>()});
  }
  std::sort(out.begin(), out.end(), [](const sample& a, const sample& b) { return a.ts < b.ts; });
  return out;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Sends `bytes` from one loopback TCP socket to another; false when the
// machine has no loopback to use.
bool send_over_loopback(std::size_t bytes) {
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 1) != 0 ||
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(listener);
    return false;
  }
  std::thread receiver([&] {
    const int c = ::accept(listener, nullptr, nullptr);
    if (c < 0) return;
    std::vector<char> buf(1 << 16);
    while (::read(c, buf.data(), buf.size()) > 0) {
    }
    ::close(c);
  });
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  bool ok = s >= 0 && ::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  std::vector<char> block(1 << 16, 'x');
  for (std::size_t sent = 0; ok && sent < bytes;) {
    const ssize_t n = ::write(s, block.data(), block.size());
    ok = n > 0;
    sent += ok ? static_cast<std::size_t>(n) : 0;
  }
  if (s >= 0) ::close(s);
  if (!ok) ::shutdown(listener, SHUT_RDWR);
  receiver.join();
  ::close(listener);
  return ok;
}

}  // namespace

TEST_CASE("host_sys counters follow what the process does") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.host_sys = {"cpu", "mem", "disk", "network"};
  cfg.host_sys_interval_ms = 20;
  npuprof::session s{cfg};
  s.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));

  // CPU: one thread spinning for 400 ms.
  const std::int64_t burn_from = now_ns();
  for (volatile std::uint64_t x = 0; now_ns() - burn_from < 400'000'000; x = x + 1) {
  }
  const std::int64_t burn_to = now_ns();

  // Memory: 96 MiB touched and held for 150 ms. Mapped directly: a compiler
  // may drop a heap block that is written and never read, and sanitizers'
  // allocators keep freed memory resident, but neither touches mmap/munmap.
  const std::size_t big = 96u << 20;
  void* block = ::mmap(nullptr, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(block != MAP_FAILED);
  std::memset(block, 1, big);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  REQUIRE(::munmap(block, big) == 0);

  // Disk: 16 MiB written next to the test binary (on disk, not tmpfs), synced.
  const std::string file = (test::fs::canonical("/proc/self/exe").parent_path() / "host_sys_test.bin").string();
  {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(fd >= 0);
    std::vector<char> chunk(1 << 20, 'd');
    for (int i = 0; i < 16; ++i) REQUIRE(::write(fd, chunk.data(), chunk.size()) == static_cast<ssize_t>(chunk.size()));
    REQUIRE(::fsync(fd) == 0);
    ::close(fd);
  }
  ::unlink(file.c_str());

  // Network: 8 MiB over loopback.
  const bool sent = send_over_loopback(8u << 20);
  if (!sent) MESSAGE("no loopback TCP here: network counters not checked");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const test::trace t = test::load(s.stop());

  const json& note = t.meta["collection"]["host_sys"];
  CHECK(note["interval_ms"] == 20);
  const auto unavailable = note["unavailable"].get<std::vector<std::string>>();
  auto available = [&](const char* what) {
    const bool ok = std::find(unavailable.begin(), unavailable.end(), what) == unavailable.end();
    if (!ok) MESSAGE("host_sys source '" << what << "' is unavailable on this machine; not checked");
    return ok;
  };

  REQUIRE(available("cpu"));
  const auto cpu = series(t, "cpu_percent");
  REQUIRE(cpu.size() > 10);
  double busiest = 0;
  for (const sample& c : cpu) {
    CHECK(c.value >= 0);
    // CPU time and wall time of one interval are read together: the
    // process cannot have used more than every core all the time.
    CHECK(c.value <= 100.0 * std::thread::hardware_concurrency() + 10);
    if (c.ts > burn_from + 60'000'000 && c.ts <= burn_to) busiest = std::max(busiest, c.value);
  }
  CHECK(busiest >= 30);  // one core spinning: ~100%, less when the machine is crowded

  REQUIRE(available("mem"));
  const auto rss = series(t, "rss_mib");
  REQUIRE(rss.size() > 10);
  double low = 1e18, high = 0;
  for (const sample& r : rss) {
    CHECK(r.value > 1);
    low = std::min(low, r.value);
    high = std::max(high, r.value);
  }
  CHECK(high - low >= 90);  // the 96 MiB block came and went

  if (available("disk")) {
    const auto written = series(t, "disk_write_mib");
    REQUIRE(!written.empty());
    CHECK(written.back().value >= 16);
    for (std::size_t i = 1; i < written.size(); ++i) CHECK(written[i].value >= written[i - 1].value);
  }
  if (available("network") && sent) {
    const auto rx = series(t, "net_rx_mib");
    const auto tx = series(t, "net_tx_mib");
    REQUIRE(!rx.empty());
    CHECK(rx.back().value >= 8);
    CHECK(tx.back().value >= 8);
  }
  // They are ordinary counters of the host_sys domain, on npuprof's thread.
  const auto any = t.named("cpu_percent", "C");
  REQUIRE(!any.empty());
  CHECK(any[0]["cat"] == "host_sys");
  CHECK(t.thread_name(any[0]["tid"].get<std::uint64_t>()) == "npuprof");
}

TEST_CASE("host_sys config: JSON, environment and errors") {
  const auto cfg = npuprof::config::from_json(R"({"host_sys": ["cpu", "network"], "host_sys_interval_ms": 250})");
  CHECK(cfg.host_sys == std::vector<std::string>{"cpu", "network"});
  CHECK(cfg.host_sys_interval_ms == 250);
  CHECK_THROWS_WITH_AS(
      npuprof::config::from_json(R"({"host_sys": ["cpu", "gpu"]})", "h.json"),
      "h.json: key 'host_sys': unknown source \"gpu\"; expected \"cpu\", \"mem\", \"disk\" or \"network\"",
      npuprof::config_error);
  CHECK_THROWS_WITH_AS(npuprof::config::from_json(R"({"host_sys": "cpu"})", "h.json"),
                       "h.json: key 'host_sys': expected an array like [\"cpu\", \"mem\"], got string",
                       npuprof::config_error);
  test::scoped_env e1("NPUPROF_HOST_SYS", "mem,disk");
  test::scoped_env e2("NPUPROF_HOST_SYS_INTERVAL_MS", "40");
  const auto env = npuprof::config::from_env();
  CHECK(env.host_sys == std::vector<std::string>{"mem", "disk"});
  CHECK(env.host_sys_interval_ms == 40);
}
