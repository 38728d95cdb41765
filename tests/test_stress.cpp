// Stress: threads record every kind of marker while a controller starts and
// stops sessions (plain, flight recorders dumped from another thread, and
// schedules stepped), and changes filters, and short-lived threads come and go.
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

  std::map<std::string, std::string> seen;  // every sequence mark, across all traces: which one had it
  int sessions = 0;
  std::uint64_t marks = 0;
  std::mt19937 rng(42);
  int dumps = 0, cycles = 0;
  // Checks one written trace. Sessions and schedule cycles never share an
  // event (`seen` across all of them); a flight recorder's dumps overlap, so
  // each is checked on its own.
  auto check_trace = [&](const test::fs::path& out, bool overlapping) {
    const auto t = test::load(out);
    test::check_nesting(t);
    std::set<std::string> in_this;
    // Per thread, the sequence marks of one trace are contiguous, except
    // for as many as that thread dropped.
    std::map<std::uint64_t, std::vector<std::uint64_t>> by_tid;
    for (const auto& e : t.phase("i")) {
      if (e["cat"] != "seq") continue;
      const std::string name = e["name"];
      CHECK_MESSAGE(in_this.insert(name).second, "mark '" << name << "' appears twice in one trace");
      if (!overlapping) {
        // Not a structured binding: the check's message is built in a lambda.
        const auto inserted = seen.emplace(name, t.meta["collection"].dump());
        CHECK_MESSAGE(inserted.second, "mark '" << name << "' appears in two traces: " << inserted.first->second
                                                << " and " << t.meta["collection"].dump() << " (session " << sessions
                                                << ")");
      }
      by_tid[e["tid"]].push_back(std::stoull(name.substr(name.find(' ') + 1)));
      ++marks;
    }
    for (auto& entry : by_tid) {
      const std::uint64_t tid = entry.first;
      auto& numbers = entry.second;
      std::sort(numbers.begin(), numbers.end());
      const std::uint64_t span = numbers.back() - numbers.front() + 1;
      const auto& drops = t.meta["counts"]["dropped_by_thread"];
      const std::uint64_t dropped =
          drops.contains(std::to_string(tid)) ? drops[std::to_string(tid)].get<std::uint64_t>() : 0;
      std::string gaps;
      for (std::size_t i = 1; i < numbers.size(); ++i) {
        if (numbers[i] != numbers[i - 1] + 1)
          gaps += " " + std::to_string(numbers[i - 1] + 1) + ".." + std::to_string(numbers[i] - 1);
      }
      CHECK_MESSAGE(span - numbers.size() <= dropped,
                    "tid " << tid << ": " << span - numbers.size() << " marks missing (" << gaps << " of "
                           << numbers.front() << ".." << numbers.back() << "), " << dropped << " dropped, in "
                           << t.meta["collection"].dump() << " " << t.dir);
    }
    std::error_code ec;
    test::fs::remove_all(t.dir, ec);
  };

  while (std::chrono::steady_clock::now() < deadline || sessions < 6) {
    auto cfg = test::config_in(dir);
    cfg.chunk_size_kb = 4;
    cfg.buffer_size_kb = (rng() % 2) ? 64 : 2048;  // sometimes tiny: overflow
    const int mode = sessions % 3;                 // plain, flight recorder, schedule
    std::vector<test::fs::path> cycle_dirs;
    if (mode == 1) {
      cfg.flight.enabled = true;
      cfg.flight.window_s = 0.02 * (1 + rng() % 5);
      cfg.flight.memory_mb = 1 + rng() % 2;  // small: the memory cap evicts too
    } else if (mode == 2) {
      cfg.schedule = npuprof::schedule{static_cast<long>(rng() % 2), 1 + static_cast<long>(rng() % 2),
                                       static_cast<long>(rng() % 2)};
      cfg.on_trace_ready = [&](const test::fs::path& p) { cycle_dirs.push_back(p); };
    }
    npuprof::session s{cfg};
    s.start();
    // A flight recorder is dumped from another thread while the controller
    // changes filters.
    std::atomic<bool> controller_done{false};
    std::vector<test::fs::path> dumped;
    std::thread dumper;
    if (mode == 1) {
      dumper = std::thread([&] {
        while (!controller_done.load()) {
          dumped.push_back(s.dump("stress"));
          std::this_thread::sleep_for(std::chrono::milliseconds(3));
        }
      });
    }
    for (int k = 0; k < 8; ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 8));
      switch (rng() % 4) {
        case 0:
          npuprof::set_domain_exclude({"comm"});
          break;
        case 1:
          npuprof::set_domain_include({"seq", "kernels"});
          break;
        default:
          npuprof::set_domain_filter({true, {}, {}});
          break;
      }
      if (mode == 2) s.step();
    }
    controller_done = true;
    if (dumper.joinable()) dumper.join();
    const auto out = s.stop();
    ++sessions;
    for (const auto& d : dumped) check_trace(d, true);
    dumps += static_cast<int>(dumped.size());
    for (const auto& c : cycle_dirs) check_trace(c, false);
    cycles += static_cast<int>(cycle_dirs.size());
    if (mode != 2 && !out.empty()) check_trace(out, mode == 1);
  }
  done = true;
  for (auto& th : threads) th.join();
  MESSAGE(sessions << " sessions (" << dumps << " flight recorder dumps, " << cycles << " schedule cycles), " << marks
                   << " sequence marks checked, " << short_lived.load() << " short-lived threads");
  CHECK(marks > 1000);
}
