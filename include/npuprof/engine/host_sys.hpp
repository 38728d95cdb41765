// Host system counters, as the Ascend profiler's host_sys collects them, read
// from Linux /proc on the session's background thread and recorded as
// ordinary counters of the "host_sys" domain (so they are windowed, scheduled
// and filtered like every other event).
#pragma once

#include "../marker/abi.hpp"

#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../clock.hpp"
#include "../counter.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

struct host_sys_domain {
  static constexpr const char* name = "host_sys";
};

/// Process CPU time (user + system, all threads) in nanoseconds. Not the
/// tick counts of /proc/self/stat: at 100 ticks a second they are off by a
/// tick per thread over a short interval (hundreds of percent at 20 ms).
inline bool read_cpu_ns(std::int64_t& ns) {
  timespec t{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return false;
  ns = static_cast<std::int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
  return true;
}

inline bool read_rss_bytes(std::uint64_t& bytes) {
  std::ifstream in("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  if (!(in >> size >> resident)) return false;
  bytes = resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return true;
}

/// Bytes this process read from and wrote to storage, from /proc/self/io.
inline bool read_disk_bytes(std::uint64_t& read, std::uint64_t& written) {
  std::ifstream in("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  bool have_read = false, have_write = false;
  while (in >> key >> value) {
    if (key == "read_bytes:") read = value, have_read = true;
    if (key == "write_bytes:") written = value, have_write = true;
  }
  return have_read && have_write;
}

/// Bytes received and sent on all network interfaces (loopback included),
/// from /proc/net/dev.
inline bool read_net_bytes(std::uint64_t& received, std::uint64_t& sent) {
  std::ifstream in("/proc/net/dev");
  std::string line;
  received = sent = 0;
  int interfaces = 0;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;  // the two header lines
    std::istringstream fields(line.substr(colon + 1));
    std::uint64_t v[9] = {};
    for (auto& x : v) fields >> x;
    if (!fields) continue;
    received += v[0];
    sent += v[8];
    ++interfaces;
  }
  return interfaces > 0;
}

/// Samples the configured host_sys counters every `interval_ns`. Values:
/// cpu_percent (of one core, like top), rss_mib, disk_read_mib and
/// disk_write_mib (since the session started), net_rx_mib and net_tx_mib
/// (system-wide, since the session started).
class host_sys_sampler {
 public:
  host_sys_sampler(const std::vector<std::string>& what, std::int64_t interval_ns) : interval_ns_(interval_ns) {
    for (const std::string& w : what) {
      cpu_ |= w == "cpu";
      mem_ |= w == "mem";
      disk_ |= w == "disk";
      net_ |= w == "network";
    }
    sample(steady_ns());  // the starting points
  }

  bool enabled() const noexcept { return cpu_ || mem_ || disk_ || net_; }

  /// Which of the requested sources could not be read (e.g. /proc/self/io
  /// without task I/O accounting).
  std::vector<std::string> unavailable() const { return unavailable_; }

  /// Records one sample of each counter when the interval has passed.
  void poll(std::int64_t now) {
    if (now - last_ns_ >= interval_ns_) sample(now);
  }

 private:
  static double mib(std::uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

  void missing(const char* what) {
    for (const std::string& u : unavailable_) {
      if (u == what) return;
    }
    unavailable_.emplace_back(what);
  }

  // The process's CPU time and the steady time it was read at: the midpoint
  // of two clock reads around it, read again if this thread was preempted
  // in between (which would tie the CPU time to the wrong instant).
  static bool read_cpu_at(std::int64_t& cpu, std::int64_t& at) {
    for (int attempt = 0;; ++attempt) {
      const std::int64_t before = steady_ns();
      if (!read_cpu_ns(cpu)) return false;
      const std::int64_t after = steady_ns();
      at = before + (after - before) / 2;
      if (after - before < 50'000 || attempt == 4) return true;
    }
  }

  // Two byte counts shown as MiB since the first sample.
  void totals(bool (*read)(std::uint64_t&, std::uint64_t&), const char* source, const char* first_name,
              const char* second_name, std::uint64_t (&base)[2], bool first) {
    std::uint64_t a = 0, b = 0;
    if (!read(a, b)) {
      missing(source);
    } else if (first) {
      base[0] = a, base[1] = b;
    } else {
      counter<host_sys_domain>(first_name, mib(a - base[0]));
      counter<host_sys_domain>(second_name, mib(b - base[1]));
    }
  }

  void sample(std::int64_t now) {
    const bool first = last_ns_ == 0;
    if (cpu_) {
      // CPU time and wall time of one interval: both read here, together.
      std::int64_t cpu = 0, at = 0;
      if (!read_cpu_at(cpu, at)) {
        missing("cpu");
      } else {
        if (cpu_at_ != 0 && at > cpu_at_) {
          counter<host_sys_domain>("cpu_percent",
                                   100.0 * static_cast<double>(cpu - cpu_ns_) / static_cast<double>(at - cpu_at_));
        }
        cpu_ns_ = cpu;
        cpu_at_ = at;
      }
    }
    if (mem_) {
      std::uint64_t rss = 0;
      if (read_rss_bytes(rss)) {
        counter<host_sys_domain>("rss_mib", mib(rss));
      } else {
        missing("mem");
      }
    }
    if (disk_) totals(read_disk_bytes, "disk", "disk_read_mib", "disk_write_mib", disk_base_, first);
    if (net_) totals(read_net_bytes, "network", "net_rx_mib", "net_tx_mib", net_base_, first);
    last_ns_ = now;
  }

  std::int64_t interval_ns_;
  std::int64_t last_ns_ = 0;
  bool cpu_ = false, mem_ = false, disk_ = false, net_ = false;
  std::int64_t cpu_ns_ = 0;  // process CPU time at cpu_at_
  std::int64_t cpu_at_ = 0;  // steady ns of the last CPU reading
  std::uint64_t disk_base_[2] = {};
  std::uint64_t net_base_[2] = {};
  std::vector<std::string> unavailable_;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
