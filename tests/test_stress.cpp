// Stress: threads record every kind of marker while a controller starts and
// stops sessions and changes filters, and short-lived threads come and go.
// Every trace must be valid JSON with strictly nested slices, and every mark
// a thread made during a session is in that session's trace exactly once
// unless counted as dropped.
#include "support.hpp"

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace {

struct kernels {
  static constexpr const char* name = "kernels";
};
struct comm {
  static constexpr const char* name = "comm";
};
struct seq {  // never filtered: carries the sequence numbers that are checked
  static constexpr const char* name = "seq";
};

double stress_seconds() {
  const char* s = std::getenv("NPUPROF_STRESS_SECONDS");
  return s ? std::atof(s) : 2.0;
}

// Ranges begun on one thread and ended on another.
struct handoff {
  std::mutex m;
  std::vector<npuprof::range_id> ids;
  void put(npuprof::range_id id) {
    std::lock_guard<std::mutex> l(m);
    ids.push_back(id);
  }
  npuprof::range_id take() {
    std::lock_guard<std::mutex> l(m);
    if (ids.empty()) return 0;
    const auto id = ids.back();
    ids.pop_back();
    return id;
  }
};

}  // namespace

TEST_CASE("recording threads, session restarts and filter changes at once") {
  test::temp_dir dir;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(stress_seconds());
  std::atomic<bool> done{false};
  handoff ranges;
  std::atomic<std::uint64_t> short_lived{0};

  auto recorder = [&](int index) {
    std::mt19937 rng(static_cast<unsigned>(index));
    const std::string prefix = "t" + std::to_string(index) + " ";
    std::uint64_t n = 0;
    while (!done.load(std::memory_order_relaxed)) {
      npuprof::mark<seq>(prefix + std::to_string(n++));
      NPUPROF_RANGE(kernels, "outer");
      {
        npuprof::scoped_range<comm> inner{"inner " + std::to_string(rng() % 8)};
        npuprof::counter<kernels>("depth", static_cast<int>(rng() % 100));
        if (rng() % 4 == 0) ranges.put(npuprof::range_start<comm>("handed over"));
        npuprof::range_end<comm>(ranges.take());
        npuprof::unique_range<kernels> u{"unique"};
      }
      if (n % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
      if (rng() % 500 == 0) {
        std::thread([&] {
          NPUPROF_RANGE(kernels, "short-lived");
          short_lived.fetch_add(1);
        }).join();
      }
    }
  };

  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back(recorder, i);

  std::set<std::string> seen;  // every sequence mark, across all traces
  int sessions = 0;
  std::uint64_t marks = 0;
  std::mt19937 rng(42);
  while (std::chrono::steady_clock::now() < deadline || sessions < 4) {
    auto cfg = test::config_in(dir);
    cfg.chunk_size_kb = 4;
    cfg.buffer_size_kb = (rng() % 2) ? 64 : 2048;  // sometimes tiny: overflow
    npuprof::session s{cfg};
    s.start();
    for (int k = 0; k < 5; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 10));
      switch (rng() % 4) {
        case 0: npuprof::set_domain_exclude({"comm"}); break;
        case 1: npuprof::set_domain_include({"seq", "kernels"}); break;
        default: npuprof::set_domain_filter({true, {}, {}}); break;
      }
    }
    const auto t = test::load(s.stop());
    ++sessions;
    test::check_nesting(t);

    // Per thread, the sequence marks of one session are contiguous, except
    // for as many as that thread dropped.
    std::map<std::uint64_t, std::vector<std::uint64_t>> by_tid;
    for (const auto& e : t.phase("i")) {
      if (e["cat"] != "seq") continue;
      const std::string name = e["name"];
      CHECK_MESSAGE(seen.insert(name).second, "mark '" << name << "' appears twice");
      by_tid[e["tid"]].push_back(std::stoull(name.substr(name.find(' ') + 1)));
      ++marks;
    }
    for (auto& entry : by_tid) {
      const std::uint64_t tid = entry.first;
      auto& numbers = entry.second;
      std::sort(numbers.begin(), numbers.end());
      const std::uint64_t span = numbers.back() - numbers.front() + 1;
      const auto& drops = t.meta["counts"]["dropped_by_thread"];
      const std::uint64_t dropped = drops.contains(std::to_string(tid)) ? drops[std::to_string(tid)].get<std::uint64_t>() : 0;
      CHECK_MESSAGE(span - numbers.size() <= dropped,
                    "tid " << tid << ": " << span - numbers.size() << " marks missing, " << dropped << " dropped");
    }
    std::error_code ec;
    test::fs::remove_all(t.dir, ec);
  }
  done = true;
  for (auto& th : threads) th.join();
  MESSAGE(sessions << " sessions, " << marks << " sequence marks checked, " << short_lived.load()
                   << " short-lived threads");
  CHECK(marks > 1000);
}
