// Schedules: which steps record, one output directory per cycle, and the
// config errors, checked step by step against torch_npu's semantics.
#include "support.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>
#include <thread>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace {

using npuprof::step_action;

// Runs `steps` steps, marking "step N" in each and counting the cycles the
// session writes; checks current_action() against `expected` on the way.
struct schedule_run {
  std::vector<test::fs::path> written;
  test::fs::path stopped;
};

schedule_run run_steps(const test::temp_dir& dir, npuprof::schedule sched, const std::vector<step_action>& expected) {
  auto cfg = test::config_in(dir);
  cfg.schedule = sched;
  schedule_run out;
  cfg.on_trace_ready = [&](const test::fs::path& p) { out.written.push_back(p); };
  npuprof::session s{cfg};
  s.start();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    CHECK_MESSAGE(s.current_step() == static_cast<long>(i), "step " << i);
    CHECK_MESSAGE(s.current_action() == expected[i], "step " << i << ": " << npuprof::to_string(s.current_action()));
    npuprof::mark(("step " + std::to_string(i)).c_str());
    { NPUPROF_RANGE(npuprof::default_domain, "work"); }
    s.step();
  }
  out.stopped = s.stop();
  return out;
}

std::vector<int> steps_in(const test::trace& t) {
  std::vector<int> steps;
  for (const auto& e : t.phase("i")) {
    const std::string name = e["name"];
    if (name.rfind("step ", 0) == 0) steps.push_back(std::stoi(name.substr(5)));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace

TEST_CASE("schedule actions follow skip_first, wait, warmup, active and repeat") {
  const npuprof::schedule s{/*wait*/ 1, /*active*/ 2, /*warmup*/ 1, /*repeat*/ 2, /*skip_first*/ 1};
  using A = step_action;
  const std::vector<A> expected = {
      A::none, A::none,   A::warmup, A::record,          A::record_and_save,  // skip, cycle 0
      A::none, A::warmup, A::record, A::record_and_save,                      // cycle 1
      A::none, A::none,   A::none};                                           // after repeat
  for (std::size_t i = 0; i < expected.size(); ++i) CHECK(s.action(static_cast<long>(i)) == expected[i]);

  test::temp_dir dir;
  const schedule_run run = run_steps(dir, s, expected);
  REQUIRE(run.written.size() == 2);
  CHECK(run.stopped == run.written.back());  // stopped between cycles: nothing more written
  std::size_t dirs = 0;
  for (auto& e : test::fs::directory_iterator(dir.path)) dirs += e.is_directory();
  CHECK(dirs == 2);

  const test::trace c0 = test::load(run.written[0]);
  const test::trace c1 = test::load(run.written[1]);
  CHECK(steps_in(c0) == std::vector<int>{3, 4});
  CHECK(steps_in(c1) == std::vector<int>{7, 8});
  CHECK(c0.count("work", "X") == 2);
  CHECK(c1.count("work", "X") == 2);
  CHECK(c0.meta["collection"]["mode"] == "schedule");
  CHECK(c0.meta["collection"]["cycle"] == 0);
  CHECK(c0.meta["collection"]["record_steps"] == test::json::array({3, 4}));
  CHECK(c1.meta["collection"]["record_steps"] == test::json::array({7, 8}));
  CHECK(c1.meta["collection"]["complete"] == true);
  CHECK(c1.meta["config"]["schedule"]["repeat"] == 2);
  for (const auto* t : {&c0, &c1}) {
    CHECK(t->count_of("unmatched_range_ends") == 0);
    CHECK(t->count_of("open_ranges") == 0);
    test::check_nesting(*t);
  }
}

TEST_CASE("schedule without wait or warmup: back-to-back cycles, repeat 0 goes on") {
  using A = step_action;
  const npuprof::schedule s{/*wait*/ 0, /*active*/ 1};
  test::temp_dir dir;
  const schedule_run run = run_steps(dir, s, {A::record_and_save, A::record_and_save, A::record_and_save});
  REQUIRE(run.written.size() == 4);  // three cycles, and the fourth step was recording at stop
  for (int i = 0; i < 3; ++i)
    CHECK(steps_in(test::load(run.written[static_cast<std::size_t>(i)])) == std::vector<int>{i});
  const test::trace partial = test::load(run.stopped);
  CHECK(partial.meta["collection"]["complete"] == false);
  CHECK(steps_in(partial).empty());
}

TEST_CASE("stop in the middle of a recording cycle writes the partial cycle") {
  using A = step_action;
  const npuprof::schedule s{/*wait*/ 1, /*active*/ 3};
  test::temp_dir dir;
  const schedule_run run = run_steps(dir, s, {A::none, A::record, A::record});
  REQUIRE(run.written.size() == 1);
  const test::trace t = test::load(run.stopped);
  CHECK(steps_in(t) == std::vector<int>{1, 2});
  CHECK(t.meta["collection"]["complete"] == false);
  CHECK(t.meta["collection"]["record_steps"] == test::json::array({1, 3}));
}

TEST_CASE("a range open across a cycle's end is incomplete there, and the next cycle does not see its end") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.schedule = npuprof::schedule{/*wait*/ 1, /*active*/ 1};
  std::vector<test::fs::path> written;
  cfg.on_trace_ready = [&](const test::fs::path& p) { written.push_back(p); };
  npuprof::session s{cfg};
  s.start();
  s.step();  // wait
  const npuprof::range_id id = npuprof::range_start("spans");
  CHECK(id != 0);
  s.step();  // cycle 0 written with "spans" open
  npuprof::range_end(id);
  s.step();  // wait
  npuprof::mark("in cycle 1");
  s.step();  // cycle 1 written
  s.stop();
  REQUIRE(written.size() == 2);
  const test::trace c0 = test::load(written[0]);
  const test::trace c1 = test::load(written[1]);
  REQUIRE(c0.count("spans", "X") == 1);
  CHECK(c0.named("spans")[0]["args"]["incomplete"] == true);
  CHECK(c0.count_of("open_ranges") == 1);
  CHECK(c1.count("in cycle 1") == 1);
  CHECK(c1.count("spans") == 0);
  CHECK(c1.count_of("unmatched_range_ends") == 0);
}

TEST_CASE("schedule config: JSON key, and errors that say which value and why") {
  const auto cfg = npuprof::config::from_json(
      R"({"schedule": {"wait": 2, "active": 3, "warmup": 1, "repeat": 4, "skip_first": 5}})");
  REQUIRE(cfg.schedule.has_value());
  CHECK(cfg.schedule->wait == 2);
  CHECK(cfg.schedule->active == 3);
  CHECK(cfg.schedule->warmup == 1);
  CHECK(cfg.schedule->repeat == 4);
  CHECK(cfg.schedule->skip_first == 5);
  auto error_of = [](const char* text) {
    try {
      npuprof::config::from_json(text, "cfg.json");
    } catch (const npuprof::config_error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  CHECK(error_of(R"({"schedule": {"wait": 1, "active": 0}})") ==
        "cfg.json: key 'schedule': active must be at least 1, got 0");
  CHECK(error_of(R"({"schedule": {"active": 1, "warmup": -2}})") ==
        "cfg.json: key 'schedule': warmup must not be negative, got -2");
  CHECK(error_of(R"({"schedule": {"active": 1, "wiat": 1}})") ==
        "cfg.json: key 'schedule.wiat': unknown; expected wait, active, warmup, repeat or skip_first");
  CHECK(error_of(R"({"schedule": {"active": "2"}})") ==
        "cfg.json: key 'schedule.active': expected an integer, got string");
  CHECK(error_of(R"({"schedule": [1, 2]})").find("key 'schedule': expected an object") != std::string::npos);
  CHECK(error_of(R"({"schedule": {"active": 1}, "flight_recorder": true})") ==
        "cfg.json: key 'schedule': cannot be used together with flight_recorder");
  npuprof::config bad;
  bad.schedule = npuprof::schedule{0, -1};
  CHECK_THROWS_WITH_AS(npuprof::session{bad}, "defaults: key 'schedule': active must be at least 1, got -1",
                       npuprof::config_error);
}

TEST_CASE("step() without a schedule counts steps and records throughout") {
  test::temp_dir dir;
  npuprof::session s{test::config_in(dir)};
  s.start();
  for (int i = 0; i < 3; ++i) {
    npuprof::mark("m");
    s.step();
  }
  CHECK(s.current_step() == 3);
  CHECK(s.current_action() == step_action::record);
  const test::trace t = test::load(s.stop());
  CHECK(t.count("m") == 3);
  CHECK(t.meta["collection"]["mode"] == "session");
}

TEST_CASE("a cycle that begins while threads record has no hole: what is thrown away is older than all it keeps") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.chunk_size_kb = 4;      // chunks change hands often
  cfg.buffer_size_kb = 1024;  // and the cap is reached: drops must be counted
  cfg.schedule = npuprof::schedule{/*wait*/ 1, /*active*/ 1};
  std::vector<test::fs::path> written;
  cfg.on_trace_ready = [&](const test::fs::path& p) { written.push_back(p); };
  npuprof::session s{cfg};
  s.start();
  {
    test::sequence_markers markers(3);
    for (int i = 0; i < 120; ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      s.step();
    }
  }
  s.stop();
  REQUIRE(written.size() == 60);
  std::set<std::string> seen;
  int marks = 0;
  for (const auto& p : written) {
    const test::trace t = test::load(p);
    CHECK_MESSAGE(test::sequence_markers::gaps(t).empty(), p << ": " << test::sequence_markers::gaps(t));
    for (const auto& e : t.phase("i")) {
      if (e["cat"] != "seq") continue;
      ++marks;
      if (!seen.insert(e["name"].get<std::string>()).second) FAIL_CHECK(e["name"] << " is in two cycles");
    }
  }
  CHECK(marks > 1000);
}

namespace {

// The ProfilerStep#N slices of a trace, by start, as (N, start, end) in ns.
std::vector<std::tuple<long, std::int64_t, std::int64_t>> step_slices(const test::trace& t) {
  std::vector<std::tuple<long, std::int64_t, std::int64_t>> out;
  for (const auto& e : t.phase("X")) {
    const std::string name = e["name"];
    if (name.rfind("ProfilerStep#", 0) != 0) continue;
    CHECK(e["args"]["domain"] == "steps");
    if (out.empty()) CHECK(t.thread_name(e["tid"].get<std::uint64_t>()) == "Steps");  // one track for all
    const std::int64_t ts = test::to_ns(e["ts"]);
    out.emplace_back(std::stol(name.substr(13)), ts, ts + test::to_ns(e["dur"]));
  }
  // By start, and by number where a coarse counter gives steps the same start.
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<1>(a), std::get<0>(a)) < std::tie(std::get<1>(b), std::get<0>(b));
  });
  return out;
}

}  // namespace

TEST_CASE("steps are ProfilerStep#N slices from one step() to the next, holding what was recorded in them") {
  test::temp_dir dir;
  npuprof::session s{test::config_in(dir)};
  s.start();
  for (int i = 0; i < 3; ++i) {
    { NPUPROF_RANGE(npuprof::default_domain, "work"); }
    s.step();
  }
  { NPUPROF_RANGE(npuprof::default_domain, "work"); }
  const auto t = test::load(s.stop());
  const auto steps = step_slices(t);
  REQUIRE(steps.size() == 4);  // three ended by step(), the last by stop()
  for (std::size_t i = 0; i < steps.size(); ++i) {
    CHECK(std::get<0>(steps[i]) == static_cast<long>(i));
    CHECK(std::get<1>(steps[i]) <= std::get<2>(steps[i]));                 // a step can be within one counter tick
    if (i > 0) CHECK(std::get<1>(steps[i]) == std::get<2>(steps[i - 1]));  // one after another
  }
  // The k-th "work" range lies in the k-th step. Both are counter ticks
  // apart: a range begun or ended the tick a step() read lies in both steps.
  std::vector<std::pair<std::int64_t, std::int64_t>> work;
  for (const auto& w : t.named("work", "X")) {
    const std::int64_t ts = test::to_ns(w["ts"]);
    work.emplace_back(ts, ts + test::to_ns(w["dur"]));
  }
  std::sort(work.begin(), work.end());
  REQUIRE(work.size() == steps.size());
  for (std::size_t k = 0; k < work.size(); ++k) {
    CHECK(std::get<1>(steps[k]) <= work[k].first);
    CHECK(work[k].second <= std::get<2>(steps[k]));
  }
  CHECK(t.meta["steps"] == test::json{{"first", 0}, {"last", 3}});
  test::check_nesting(t);
}

TEST_CASE("a program that never calls step() has no steps") {
  test::temp_dir dir;
  const auto t = test::record(test::config_in(dir), [] { NPUPROF_RANGE(npuprof::default_domain, "work"); });
  CHECK(step_slices(t).empty());
  CHECK_FALSE(t.meta.contains("steps"));
}

TEST_CASE("a schedule cycle holds its recording steps only, as torch_npu numbers them") {
  test::temp_dir dir;
  const npuprof::schedule sched{/*wait*/ 1, /*active*/ 2, /*warmup*/ 1, /*repeat*/ 1, /*skip_first*/ 0};
  using A = step_action;
  const schedule_run run = run_steps(dir, sched, {A::none, A::warmup, A::record, A::record_and_save, A::none});
  REQUIRE(run.written.size() == 1);
  const auto steps = step_slices(test::load(run.written[0]));
  REQUIRE(steps.size() == 2);
  CHECK(std::get<0>(steps[0]) == 2);
  CHECK(std::get<0>(steps[1]) == 3);
  CHECK(std::get<1>(steps[1]) == std::get<2>(steps[0]));
}

TEST_CASE("past 65536 ended steps the oldest are let go, and the trace says from when its steps are complete") {
  test::temp_dir dir;
  npuprof::session s{test::config_in(dir)};
  s.start();
  constexpr long steps = 70000;
  for (long i = 0; i < steps; ++i) s.step();
  const auto t = test::load(s.stop());
  const auto kept = step_slices(t);
  REQUIRE(kept.size() == 65537);  // the latest 65536 ended, and the one stop() ended
  CHECK(std::get<0>(kept.front()) == steps - 65536);
  CHECK(std::get<0>(kept.back()) == steps);
  REQUIRE(t.meta["collection"].contains("steps_from_ns"));
  CHECK(std::llabs(t.meta["collection"]["steps_from_ns"].get<std::int64_t>() - std::get<1>(kept.front())) <= 1);
}

TEST_CASE("a schedule cycle whose steps are all kept says nothing of steps let go long before") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.schedule = npuprof::schedule{/*wait*/ 1, /*active*/ 2, /*warmup*/ 1, /*repeat*/ 1, /*skip_first*/ 70000};
  std::vector<test::fs::path> written;
  cfg.on_trace_ready = [&](const test::fs::path& p) { written.push_back(p); };
  npuprof::session s{cfg};
  s.start();
  for (int i = 0; i < 70004; ++i) s.step();
  s.stop();
  REQUIRE(written.size() == 1);
  const auto t = test::load(written[0]);
  CHECK(step_slices(t).size() == 2);
  CHECK_FALSE(t.meta["collection"].contains("steps_from_ns"));
}

TEST_CASE("step() without a schedule goes on while a dump is being written") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  std::atomic<bool> stepped{false}, in_callback{false};
  std::atomic<bool> stepped_meanwhile{false};
  cfg.on_trace_ready = [&](const test::fs::path&) {
    in_callback = true;
    // Held here until the main thread has stepped (at most 10 s: a step()
    // that waited for this dump would never come).
    for (int i = 0; i < 10000 && !stepped; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    stepped_meanwhile = stepped.load();
  };
  npuprof::session s{cfg};
  s.start();
  std::thread dumper([&] { s.dump("held"); });
  while (!in_callback) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  s.step();
  stepped = true;
  dumper.join();
  CHECK(stepped_meanwhile);
  s.stop();
}

TEST_CASE("fork() child exits while another thread writes a cycle: every directory it wrote is whole") {
  if (test::thread_sanitizer) {
    MESSAGE("not under ThreadSanitizer: the child of a process that ran threads starts its own");
    return;
  }
  for (int round = 0; round < 4; ++round) {
    test::temp_dir dir;
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      test_in_forked_child = true;
      auto cfg = test::config_in(dir);
      cfg.schedule = npuprof::schedule{/*wait*/ 0, /*active*/ 1, /*warmup*/ 0, /*repeat*/ 0, /*skip_first*/ 0};
      static npuprof::session* s = new npuprof::session{cfg};  // still running at exit
      s->start();
      std::thread([] {
        for (;;) {
          for (int i = 0; i < 20000; ++i) NPUPROF_RANGE(npuprof::default_domain, "work");
          try {
            s->step();  // every step ends a cycle, written here
          } catch (const npuprof::error&) {
            return;  // stopped at exit
          }
        }
      }).detach();
      std::this_thread::sleep_for(std::chrono::milliseconds(30 + 10 * round));
      std::exit(0);
    }
    const int status = test::child_status(pid, 120);
    REQUIRE(status != -1);
    REQUIRE(WIFEXITED(status));
    int traces = 0;
    std::size_t work = 0;
    for (const auto& e : test::fs::directory_iterator(dir.path)) {
      INFO(e.path());
      CHECK(test::fs::exists(e.path() / "profiler_metadata.json"));
      CHECK(test::fs::exists(e.path() / "range_summary.csv"));
      work += test::load(e.path()).count("work", "X");  // parses trace_view.json whole
      ++traces;
    }
    CHECK(traces > 0);
    CHECK(work > 0);
  }
}
