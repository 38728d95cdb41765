// Helpers shared by the test suites: temporary output directories, running a
// session around a function, and reading the written trace back.
#pragma once

#include <doctest/doctest.h>

#include <npuprof/session.hpp>
#include <npuprof/trace_data.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

extern bool test_in_forked_child;  // tests/main.cpp

#if defined(__SANITIZE_THREAD__)
#define NPUPROF_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NPUPROF_TEST_TSAN 1
#endif
#endif

#if defined(__SANITIZE_ADDRESS__) || defined(NPUPROF_TEST_TSAN)
#define NPUPROF_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NPUPROF_TEST_SANITIZED 1
#endif
#endif

namespace test {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// ThreadSanitizer's runtime cannot start threads in the child of a
/// multi-threaded fork(): such children skip that part under it.
#ifdef NPUPROF_TEST_TSAN
inline constexpr bool thread_sanitizer = true;
#else
inline constexpr bool thread_sanitizer = false;
#endif

/// Whether a sanitizer runs: its own bookkeeping grows with every access,
/// so resident memory says nothing about npuprof's.
#ifdef NPUPROF_TEST_SANITIZED
inline constexpr bool sanitized = true;
#else
inline constexpr bool sanitized = false;
#endif

/// The process's resident memory, in bytes.
inline std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

/// A fresh directory, removed with its contents at the end of the test.
struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "npuprof-test-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
};

inline npuprof::config config_in(const temp_dir& dir) {
  npuprof::config cfg;
  cfg.output_dir = dir.path.string();
  cfg.flush_interval_ms = 2;
  return cfg;
}

inline json read_json(const fs::path& file) {
  std::ifstream in(file);
  REQUIRE_MESSAGE(in.good(), "cannot open " << file);
  return json::parse(in);  // throws (and fails the test) on invalid JSON
}

/// The whole of a text file ("" where it cannot be read).
inline std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::int64_t to_ns(const json& us) { return std::llround(us.get<double>() * 1000.0); }

/// A written trace, read back.
struct trace {
  fs::path dir;
  json events;  // the trace_view.json array
  json meta;    // profiler_metadata.json

  std::vector<json> where(const std::function<bool(const json&)>& pred) const {
    std::vector<json> out;
    for (const json& e : events) {
      if (pred(e)) out.push_back(e);
    }
    return out;
  }
  std::vector<json> phase(const std::string& ph) const {
    return where([&](const json& e) { return e["ph"] == ph; });
  }
  std::vector<json> named(const std::string& name, const std::string& ph = "") const {
    return where([&](const json& e) { return e["name"] == name && (ph.empty() || e["ph"] == ph); });
  }
  std::size_t count(const std::string& name, const std::string& ph = "") const { return named(name, ph).size(); }
  /// The thread name given to `tid` by a thread_name metadata event.
  std::string thread_name(std::uint64_t tid) const {
    for (const json& e : events) {
      if (e["ph"] == "M" && e["name"] == "thread_name" && e["tid"] == tid) return e["args"]["name"];
    }
    return "";
  }
  std::uint64_t count_of(const char* key) const { return meta["counts"][key].get<std::uint64_t>(); }
};

inline trace load(const fs::path& dir) {
  trace t;
  t.dir = dir;
  t.events = read_json(dir / "trace_view.json");
  t.meta = read_json(dir / "profiler_metadata.json");
  REQUIRE(t.events.is_array());
  return t;
}

/// Runs `body` inside a session configured by `cfg` and reads the trace.
inline trace record(npuprof::config cfg, const std::function<void()>& body) {
  npuprof::session s{cfg};
  s.start();
  body();
  return load(s.stop());
}

/// Checks that the X slices of every track nest strictly, in file order
/// sorted by start (longer first on ties). Returns the number of slices seen.
inline std::size_t check_nesting(const trace& t) {
  using track = std::pair<std::uint64_t, std::uint64_t>;  // pid, tid
  std::map<track, std::vector<std::pair<std::int64_t, std::int64_t>>> open;
  std::map<track, std::pair<std::int64_t, std::int64_t>> last;
  std::size_t n = 0;
  for (const json& e : t.events) {
    if (e["ph"] != "X") continue;
    ++n;
    const track tid{e["pid"].get<std::uint64_t>(), e["tid"].get<std::uint64_t>()};
    const std::int64_t b = to_ns(e["ts"]);
    const std::int64_t end = b + to_ns(e["dur"]);
    auto it = last.find(tid);
    if (it != last.end()) {
      CHECK_MESSAGE((it->second.first < b || (it->second.first == b && it->second.second >= end)),
                    "slices of tid " << tid.second << " are not sorted by start, longer first");
    }
    last[tid] = {b, end};
    auto& stack = open[tid];
    while (!stack.empty() && stack.back().second <= b) stack.pop_back();
    CHECK_MESSAGE((stack.empty() || stack.back().second >= end),
                  "slice '" << e["name"] << "' on tid " << tid.second << " overlaps its parent without nesting");
    stack.push_back({b, end});
  }
  return n;
}

/// Checks nesting as a viewer does: ts and ts + dur added as float64 (every
/// JSON viewer reads numbers so), per track in file order. Returns the
/// number of slices that overlap their parent or outlast it.
inline std::size_t float64_nesting_violations(const trace& t) {
  using track = std::pair<std::uint64_t, std::uint64_t>;
  std::map<track, std::vector<double>> open;  // ends of the enclosing slices
  std::size_t bad = 0;
  for (const json& e : t.events) {
    if (e["ph"] != "X") continue;
    const double b = e["ts"].get<double>();
    const double end = b + e["dur"].get<double>();
    auto& stack = open[{e["pid"].get<std::uint64_t>(), e["tid"].get<std::uint64_t>()}];
    while (!stack.empty() && stack.back() <= b) stack.pop_back();
    if (!stack.empty() && stack.back() < end) ++bad;
    stack.push_back(end);
  }
  return bad;
}

/// Runs `body` in a forked child, which then calls exit(0) (so a session it
/// left running is written by the exit handler). Returns the one trace the
/// child wrote under `dir`.
/// Waits for a child for up to `seconds`; a child still running then hung,
/// and is killed. Returns its wait status, or -1.
inline int child_status(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 100; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  MESSAGE("the child did not end within " << seconds << " s: killed");
  return -1;
}

inline trace trace_of_child(const temp_dir& dir, const std::function<void()>& body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    test_in_forked_child = true;
    body();
    std::exit(0);
  }
  const int status = child_status(pid, 120);
  REQUIRE(status != -1);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  std::vector<fs::path> outputs;
  for (auto& e : fs::directory_iterator(dir.path)) outputs.push_back(e.path());
  REQUIRE(outputs.size() == 1);
  return load(outputs[0]);
}

/// Sets an environment variable for the life of this object.
struct scoped_env {
  std::string name;
  std::string old;
  bool had;
  scoped_env(const char* n, const char* value) : name(n) {
    const char* v = std::getenv(n);
    had = v != nullptr;
    if (had) old = v;
    if (value) {
      ::setenv(n, value, 1);
    } else {
      ::unsetenv(n);
    }
  }
  ~scoped_env() {
    if (had) {
      ::setenv(name.c_str(), old.c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
};

/// Threads that mark "<thread> <n>" (n = 0, 1, 2, ...) in domain "seq" as
/// fast as they can, until destroyed: every trace cut while they run must
/// hold, per thread, an unbroken run of numbers (or count the drops).
class sequence_markers {
 public:
  explicit sequence_markers(int threads) {
    for (int i = 0; i < threads; ++i) {
      threads_.emplace_back([this, i] {
        const std::string prefix = std::to_string(i) + " ";
        for (std::uint64_t n = 0; !done_.load(std::memory_order_relaxed); ++n) {
          npuprof::mark<seq_domain>(prefix + std::to_string(n));
          if (n % 256 == 0) std::this_thread::yield();
        }
      });
    }
  }
  ~sequence_markers() {
    done_ = true;
    for (auto& t : threads_) t.join();
  }
  sequence_markers(const sequence_markers&) = delete;
  sequence_markers& operator=(const sequence_markers&) = delete;

  struct seq_domain {
    static constexpr const char* name = "seq";
  };

  /// Per marking thread, the numbers `t` lacks between its first and last
  /// beyond what it counts as dropped; empty when there are none.
  static std::string gaps(const trace& t) {
    std::map<std::string, std::vector<std::uint64_t>> by_thread;
    std::map<std::string, std::uint64_t> tid_of;
    for (const json& e : t.phase("i")) {
      if (e["cat"] != "seq") continue;
      const std::string name = e["name"];
      const std::string who = name.substr(0, name.find(' '));
      by_thread[who].push_back(std::stoull(name.substr(name.find(' ') + 1)));
      tid_of[who] = e["tid"].get<std::uint64_t>();
    }
    std::string out;
    for (auto& [who, numbers] : by_thread) {
      std::sort(numbers.begin(), numbers.end());
      const std::uint64_t missing = numbers.back() - numbers.front() + 1 - numbers.size();
      const json& drops = t.meta["counts"]["dropped_by_thread"];
      const std::string tid = std::to_string(tid_of[who]);
      const std::uint64_t dropped = drops.contains(tid) ? drops[tid].get<std::uint64_t>() : 0;
      if (missing <= dropped) continue;
      out += "thread " + who + ": " + std::to_string(missing) + " missing (" + std::to_string(dropped) + " dropped):";
      for (std::size_t i = 1; i < numbers.size(); ++i) {
        if (numbers[i] != numbers[i - 1] + 1) {
          out += " " + std::to_string(numbers[i - 1] + 1) + ".." + std::to_string(numbers[i] - 1);
        }
      }
      out += "; ";
    }
    return out;
  }

 private:
  std::atomic<bool> done_{false};
  std::vector<std::thread> threads_;
};

}  // namespace test
