// The flight recorder: a window that stays bounded in time and memory, dumps
// that leave recording alone, dumps by signal and at exit; and the
// min_duration_us threshold.
#include "support.hpp"

// What this suite checks from the inside.
#include <npuprof/engine/chunk_pool.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <optional>
#include <thread>
#include <vector>

namespace {

npuprof::config flight_config(const test::temp_dir& dir, double window_s, std::size_t memory_mb = 64) {
  auto cfg = test::config_in(dir);
  cfg.flight.enabled = true;
  cfg.flight.window_s = window_s;
  cfg.flight.memory_mb = memory_mb;
  return cfg;
}

std::int64_t steady_now() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Marks "seq" with a growing counter value every `period`, remembering when
// each was made, until told to stop.
struct sequence_writer {
  std::atomic<bool> stop{false};
  std::vector<std::int64_t> made_at;  // steady ns, by sequence number
  std::thread thread;

  explicit sequence_writer(std::chrono::microseconds period) {
    made_at.reserve(1 << 20);
    thread = std::thread([this, period] {
      std::int64_t i = 0;
      while (!stop.load()) {
        made_at.push_back(steady_now());
        npuprof::counter("seq", i++);
        std::this_thread::sleep_for(period);
      }
    });
  }
  void finish() {
    stop = true;
    thread.join();
  }
};

std::vector<std::int64_t> sequence_in(const test::trace& t) {
  std::vector<std::int64_t> seq;
  for (const auto& e : t.phase("C")) {
    if (e["name"] == "seq") seq.push_back(e["args"]["seq"].get<std::int64_t>());
  }
  std::sort(seq.begin(), seq.end());
  return seq;
}

// Records `per_ms` registered scoped ranges (24 bytes each), then sleeps a
// millisecond, until told to stop or `enough` ranges went by (at most 30 s).
struct paced_recorder {
  std::atomic<bool> stop{false};
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> ranges{0};
  std::thread thread;

  explicit paced_recorder(int per_ms, std::uint64_t enough = ~std::uint64_t{0}) {
    thread = std::thread([this, per_ms, enough] {
      static const npuprof::registered_string<npuprof::default_domain> kTick{"tick"};
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!stop.load() && ranges.load() < enough && std::chrono::steady_clock::now() < deadline) {
        for (int i = 0; i < per_ms; ++i) npuprof::scoped_range<> r{kTick};
        ranges += static_cast<std::uint64_t>(per_ms);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      done = true;
    });
  }
  ~paced_recorder() { finish(); }  // also when a failed REQUIRE leaves early
  std::uint64_t finish() {
    stop = true;
    if (thread.joinable()) thread.join();
    return ranges.load();
  }
};

}  // namespace

TEST_CASE("a dump holds exactly the window, and recording goes on through it") {
  test::temp_dir dir;
  npuprof::session s{flight_config(dir, 0.3)};
  s.start();
  npuprof::range_id spanning = npuprof::range_start("spans the window start");
  sequence_writer w{std::chrono::microseconds(200)};
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  npuprof::range_end(spanning);
  const auto dumped = npuprof::dump("test");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  w.finish();
  // Stopped before the dump is read, so that the two windows overlap however
  // slowly the checks below run.
  const auto stopped = s.stop();
  const test::trace t = test::load(dumped);
  CHECK(t.meta["collection"]["mode"] == "flight_recorder");
  CHECK(t.meta["collection"]["reason"] == "test");
  CHECK(t.meta["collection"]["dump"] == 1);
  const std::int64_t window_start = t.meta["collection"]["window_start_ns"];
  CHECK(t.meta["collection"]["complete_from_ns"] == window_start);  // nothing evicted for memory
  const std::int64_t dump_end = t.meta["session"]["end_ns"];
  CHECK(dump_end - window_start == 300'000'000);

  // Every sample made well inside the window is there, none made well
  // before it (1 ms either side for the time between reading the clock and
  // recording).
  const std::vector<std::int64_t> seq = sequence_in(t);
  REQUIRE(!seq.empty());
  std::size_t expected_inside = 0;
  for (std::size_t i = 0; i < w.made_at.size(); ++i) {
    const std::int64_t at = w.made_at[i];
    const bool present = std::binary_search(seq.begin(), seq.end(), static_cast<std::int64_t>(i));
    if (at >= window_start + 1'000'000 && at <= dump_end - 1'000'000) {
      ++expected_inside;
      CHECK_MESSAGE(present, "sample " << i << " inside the window is missing: made " << (at - window_start) / 1000
                                       << " us after its start, " << (dump_end - at) / 1000 << " us before its end");
    }
    if (at < window_start - 1'000'000) CHECK_MESSAGE(!present, "sample " << i << " before the window is in the dump");
  }
  CHECK(expected_inside > 100);
  for (const auto& e : t.events) {
    if (e["ph"] == "X") CHECK(test::to_ns(e["ts"]) + test::to_ns(e["dur"]) >= window_start - 1000);
    if (e["ph"] == "C" || e["ph"] == "i") CHECK(test::to_ns(e["ts"]) >= window_start - 1000);
  }
  CHECK(t.count("spans the window start", "X") == 1);  // began before the window, ended in it
  CHECK(t.count_of("outside_window") > 0);

  // Recording went on: the window written at stop continues the sequence
  // without a gap, and nothing was dropped.
  const test::trace last = test::load(stopped);
  CHECK(last.meta["collection"]["reason"] == "stop");
  const std::vector<std::int64_t> after = sequence_in(last);
  REQUIRE(!after.empty());
  CHECK(after.back() == static_cast<std::int64_t>(w.made_at.size()) - 1);
  for (std::size_t i = 1; i < after.size(); ++i) REQUIRE(after[i] == after[i - 1] + 1);
  // Where the windows overlap (the dump was written within a window of the
  // stop; a slow machine may take longer), nothing between them was lost.
  const std::int64_t last_window_start = last.meta["collection"]["window_start_ns"];
  if (last_window_start <= dump_end) {
    CHECK(after.front() <= seq.back() + 1);
  } else {
    MESSAGE("the dump took longer than the window to write: the windows do not overlap");
  }
  CHECK(last.count_of("dropped_events") == 0);
}

TEST_CASE("two dumps in a row give two complete, valid traces") {
  test::temp_dir dir;
  std::vector<test::fs::path> ready;
  auto cfg = flight_config(dir, 30);
  cfg.on_trace_ready = [&](const test::fs::path& p) { ready.push_back(p); };
  npuprof::session s{cfg};
  s.start();
  for (int i = 0; i < 1000; ++i) {
    NPUPROF_RANGE(npuprof::default_domain, "outer");
    NPUPROF_RANGE(npuprof::default_domain, "inner");
  }
  std::thread other([] {
    for (int i = 0; i < 500; ++i) npuprof::mark("other thread");
  });
  other.join();
  const test::trace a = test::load(s.dump("first"));
  const test::trace b = test::load(s.dump("second"));
  s.cancel();
  CHECK(ready.size() == 2);
  for (const auto* t : {&a, &b}) {
    CHECK(t->count("outer", "X") == 1000);
    CHECK(t->count("inner", "X") == 1000);
    CHECK(t->count("other thread") == 500);
    CHECK(test::check_nesting(*t) == 2000);
    CHECK(t->count_of("dropped_events") == 0);
  }
  CHECK(a.meta["collection"]["dump"] == 1);
  CHECK(b.meta["collection"]["dump"] == 2);
  CHECK(b.meta["collection"]["reason"] == "second");
  CHECK(a.dir != b.dir);
}

TEST_CASE("memory stays bounded however much is recorded") {
  test::temp_dir dir;
  auto cfg = flight_config(dir, 3600, /*memory_mb*/ 4);
  cfg.flush_interval_ms = 1;
  npuprof::session s{cfg};
  s.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const std::size_t rss_before = test::resident_bytes();
  static const npuprof::registered_string<npuprof::default_domain> kTick{"tick"};
  std::atomic<bool> stop{false};
  std::atomic<std::uint64_t> ranges{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < 1000; ++i) npuprof::scoped_range<> r{kTick};
        ranges.fetch_add(1000, std::memory_order_relaxed);
      }
    });
  }
  // Until far more than the cap went through (slower under sanitizers).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(8);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (ranges.load() * 24 > (64u << 20)) break;
  }
  const std::int64_t recording_stopped = steady_now();
  stop = true;
  for (auto& t : threads) t.join();
  const std::size_t rss_after = test::resident_bytes();
  const test::trace t = test::load(s.stop());
  const std::uint64_t recorded_bytes = ranges.load() * 24;
  MESSAGE("ranges: " << ranges.load() << " (" << recorded_bytes / (1 << 20) << " MiB of records), RSS growth "
                     << (static_cast<double>(rss_after) - static_cast<double>(rss_before)) / (1 << 20) << " MiB");
  REQUIRE(recorded_bytes > 16u << 20);  // far more than the cap went through
  CHECK(npuprof::detail::pool().bytes_allocated() <= 4u << 20);
  if (!test::sanitized)
    CHECK(rss_after < rss_before + (12u << 20));  // 4 MiB cap, plus slack for stacks and the allocator
  CHECK(t.count_of("evicted_bytes") > 0);
  CHECK(t.count_of("buffer_bytes") <= 4u << 20);
  const std::size_t kept = t.count("tick", "X");
  CHECK(kept > 0);
  CHECK(kept + t.count_of("dropped_events") < ranges.load());
  // What is kept is the latest: its last range ended when recording stopped.
  std::int64_t last_end = 0;
  for (const auto& e : t.named("tick", "X"))
    last_end = std::max(last_end, test::to_ns(e["ts"]) + test::to_ns(e["dur"]));
  CHECK(recording_stopped - last_end < 200'000'000);
  CHECK(t.meta["collection"]["complete_from_ns"].get<std::int64_t>() >
        t.meta["collection"]["window_start_ns"].get<std::int64_t>());
}

TEST_CASE("dumps back to back do not hold up trimming: recording far past the memory cap drops nothing") {
  test::temp_dir dir;
  auto cfg = flight_config(dir, 0.05, /*memory_mb*/ 16);
  cfg.flush_interval_ms = 5;
  npuprof::session s{cfg};
  s.start();
  // At most about 24 MB of records a second: the window holds a small part
  // of the cap, and recording goes on until three times the cap went by.
  paced_recorder recorder(1000, 3 * (16u << 20) / 24 + 1);
  // Two threads dump in turn, so that one always holds the dump lock.
  std::vector<test::fs::path> written[2];
  std::vector<std::thread> dumpers;
  for (auto& paths : written) {
    dumpers.emplace_back([&] {
      while (!recorder.done.load()) paths.push_back(s.dump("back to back"));
    });
  }
  for (auto& t : dumpers) t.join();
  const std::uint64_t ranges = recorder.finish();
  const test::trace last = test::load(s.stop());
  std::size_t dumps = 0;
  std::uint64_t dropped_in_dumps = 0, ticks_in_dumps = 0;
  for (const auto& paths : written) {
    for (const auto& p : paths) {
      dropped_in_dumps +=
          test::read_json(p / "profiler_metadata.json")["counts"]["dropped_events"].get<std::uint64_t>();
      if (dumps++ % 50 == 0) ticks_in_dumps += test::load(p).count("tick", "X");  // a few read whole
    }
  }
  MESSAGE(dumps << " dumps, " << ranges << " ranges (" << ranges * 24 / (1 << 20) << " MiB of records)");
  REQUIRE(ranges * 24 > 3 * (16u << 20));  // the cap filled several times over
  CHECK(dumps >= 5);
  CHECK(dropped_in_dumps == 0);
  CHECK(last.count_of("dropped_events") == 0);
  CHECK(ticks_in_dumps > 0);
}

TEST_CASE("a dump by signal: the handler only sets a flag, npuprof's thread writes") {
  test::temp_dir dir;
  std::atomic<int> ready{0};
  auto cfg = flight_config(dir, 60);
  cfg.on_trace_ready = [&](const test::fs::path&) { ready.fetch_add(1); };
  {
    npuprof::session s{cfg};
    s.start();
    npuprof::mark("before the signal");
    REQUIRE(::kill(::getpid(), SIGUSR1) == 0);
    for (int i = 0; i < 500 && ready.load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(ready.load() == 1);
    const test::trace t = test::load(s.output_path());
    CHECK(t.count("before the signal") == 1);
    CHECK(t.meta["collection"]["reason"] == "signal SIGUSR1");
    s.cancel();
  }
  // A stop while a signal's dump is being written waits for it, and ends.
  for (int i = 0; i < 5; ++i) {
    npuprof::session s{flight_config(dir, 60)};
    s.start();
    for (int k = 0; k < 2000; ++k) npuprof::mark("busy");
    REQUIRE(::kill(::getpid(), SIGUSR1) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(i * 3));
    test::load(s.stop());
  }
  struct sigaction now {};
  ::sigaction(SIGUSR1, nullptr, &now);
  CHECK((now.sa_handler == SIG_DFL));  // put back when the session ended
}

TEST_CASE("a flight recorder running at exit writes its window; dump_at_exit false writes nothing") {
  std::size_t threads = 0;  // this one and ThreadSanitizer's own, unless a device runtime left its threads
  for ([[maybe_unused]] const auto& task : test::fs::directory_iterator("/proc/self/task")) ++threads;
  if (test::thread_sanitizer && threads > 2) {
    // A device runtime's threads (the simulated one's, when earlier cases
    // found it) make this process multi-threaded: ThreadSanitizer lets no
    // fork() child of it start the session's thread.
    MESSAGE("under ThreadSanitizer with " << threads << " threads the exit of a forked child is not checked");
    return;
  }
  {
    test::temp_dir dir;
    // A fork() child's session is host only, as README says: the device
    // runtime's threads (here the simulated one's) stayed in the parent,
    // maybe holding its locks.
    const test::trace t = test::trace_of_child(dir, [&] {
      auto cfg = flight_config(dir, 60);
      cfg.backend = "host";
      auto* s = new npuprof::session{cfg};  // left running for the exit handler
      s->start();
      npuprof::mark("before exit");
    });
    CHECK(t.count("before exit") == 1);
    CHECK(t.meta["collection"]["reason"] == "exit");
  }
  {
    test::temp_dir dir;
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      test_in_forked_child = true;
      auto cfg = flight_config(dir, 60);
      cfg.backend = "host";
      cfg.flight.dump_at_exit = false;
      auto* s = new npuprof::session{cfg};
      s->start();
      npuprof::mark("before exit");
      std::exit(0);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    CHECK(test::fs::is_empty(dir.path));
  }
}

TEST_CASE("min_duration_us leaves short ranges out and counts them") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.min_duration_us = 2000;
  const test::trace t = test::record(cfg, [] {
    for (int i = 0; i < 5; ++i) {
      npuprof::scoped_range<> r{"slow"};
      std::this_thread::sleep_for(std::chrono::milliseconds(3));
    }
    for (int i = 0; i < 20; ++i) npuprof::scoped_range<> r{"fast"};
    npuprof::mark("marks stay");
  });
  CHECK(t.count("slow", "X") == 5);
  CHECK(t.count("fast") == 0);
  CHECK(t.count("marks stay") == 1);
  CHECK(t.count_of("short_ranges") == 20);
}

TEST_CASE("flight recorder config and npuprof::dump without a session") {
  const auto cfg = npuprof::config::from_json(
      R"({"flight_recorder": {"window_s": 12.5, "memory_mb": 32, "signal": "SIGUSR2", "dump_at_exit": false}, "min_duration_us": 50})");
  CHECK(cfg.flight.enabled);
  CHECK(cfg.flight.window_s == 12.5);
  CHECK(cfg.flight.memory_mb == 32);
  CHECK(cfg.flight.signal == SIGUSR2);
  CHECK_FALSE(cfg.flight.dump_at_exit);
  CHECK(cfg.min_duration_us == 50);
  CHECK(npuprof::config::from_json(R"({"flight_recorder": true})").flight.enabled);
  CHECK_THROWS_WITH_AS(
      npuprof::config::from_json(R"({"flight_recorder": {"window_s": 0}})", "f.json"),
      "f.json: key 'flight_recorder.window_s': must be above 0 and at most a week (604800), got 0.000000",
      npuprof::config_error);
  CHECK_THROWS_WITH_AS(
      npuprof::config::from_json(R"({"flight_recorder": {"signal": "SIGKILL"}})", "f.json"),
      "f.json: key 'flight_recorder.signal': expected \"SIGUSR1\", \"SIGUSR2\" or \"none\", got \"SIGKILL\"",
      npuprof::config_error);
  CHECK_THROWS_WITH_AS(npuprof::dump("x"), "npuprof: cannot dump: no session is running", npuprof::error);
}

struct requests {
  static constexpr const char* name = "requests";
};

TEST_CASE("a range that began before the window is drawn from the window's start and counted apart") {
  test::temp_dir dir;
  auto cfg = flight_config(dir, 0.1);
  npuprof::session s{cfg};
  s.start();
  const npuprof::range_id id = npuprof::range_start<requests>("long request");
  std::optional<npuprof::scoped_range<requests>> scoped;
  scoped.emplace("long scoped request");  // a copied message: a begin and an end record
  // Enough records after it that its chunk is handed over, drained and, once
  // older than the window, let go.
  for (int i = 0; i < 20'000; ++i) npuprof::mark("filler " + std::to_string(i));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  npuprof::range_end<requests>(id);
  npuprof::range_end(0xdeadbeef);  // a caller's unknown id stays an unknown id
  scoped.reset();
  const test::trace t = test::load(npuprof::dump("check"));
  s.stop();
  CHECK(t.count("long request") == 0);
  CHECK(t.count("long scoped request") == 0);
  CHECK(t.count_of("began_before_window") == 2);
  CHECK(t.count_of("unmatched_range_ends") == 1);
  const auto slices = t.named("(began before the window)", "X");
  REQUIRE(slices.size() == 2);
  for (const auto& slice : slices) {
    CHECK(slice["args"]["began_before_window"] == true);
    CHECK(slice["cat"] == "requests");  // the range's domain, which its end names
    CHECK(slice["args"]["domain"] == "requests");
  }
  const std::int64_t window_start = t.meta["collection"]["window_start_ns"].get<std::int64_t>();
  for (const auto& slice : slices) {
    CHECK(std::llabs(test::to_ns(slice["ts"]) - window_start) <= 1000);
    CHECK(test::to_ns(slice["dur"]) > 50'000'000);  // to the end, at the end of the 100 ms window
  }
}

TEST_CASE("a range that began before the window is kept by min_duration_us and counted once") {
  test::temp_dir dir;
  auto cfg = flight_config(dir, 0.1);
  cfg.min_duration_us = 10'000'000;  // longer than anything drawn in the window
  npuprof::session s{cfg};
  s.start();
  const npuprof::range_id id = npuprof::range_start("long request");
  for (int i = 0; i < 20'000; ++i) npuprof::mark("filler " + std::to_string(i));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  npuprof::range_end(id);
  { NPUPROF_RANGE(npuprof::default_domain, "short"); }
  const test::trace t = test::load(npuprof::dump("check"));
  s.stop();
  CHECK(t.count_of("began_before_window") == 1);
  CHECK(t.named("(began before the window)", "X").size() == 1);
  CHECK(t.count_of("short_ranges") == 1);  // "short" only
  CHECK(t.count("short") == 0);
}

TEST_CASE("on_trace_ready of a dump by signal may stop the session") {
  test::temp_dir dir;
  std::atomic<bool> stopped{false};
  std::string error;
  npuprof::session* running = nullptr;
  auto cfg = flight_config(dir, 60);
  std::atomic<bool> stopping{false};
  cfg.on_trace_ready = [&](const test::fs::path&) {
    if (stopping.exchange(true)) return;  // the stop's own directory
    try {
      running->stop();  // on the thread that wrote the dump
    } catch (const std::exception& e) {
      error = e.what();
    }
    stopped = true;
  };
  {
    npuprof::session s{cfg};
    running = &s;
    s.start();
    npuprof::mark("before the signal");
    REQUIRE(::kill(::getpid(), SIGUSR1) == 0);
    for (int i = 0; i < 1000 && !stopped.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(stopped.load());
    CHECK_MESSAGE(error.empty(), error);
    CHECK_FALSE(s.running());
    const test::trace t = test::load(s.output_path());  // what stop() wrote
    CHECK(t.count("before the signal") == 1);
    CHECK(t.meta["collection"]["reason"] == "stop");
  }  // destroyed while, or after, the dump's thread ends
  std::size_t written = 0;
  for (const auto& e : test::fs::directory_iterator(dir.path)) written += e.is_directory();
  CHECK(written == 2);  // the signal's dump, then the stop's
}

TEST_CASE("a range that began and ended before the window is counted as outside it, and only so") {
  test::temp_dir dir;
  auto cfg = flight_config(dir, 0.1);
  npuprof::session s{cfg};
  s.start();
  const npuprof::range_id id = npuprof::range_start("long request");
  for (int i = 0; i < 20'000; ++i) npuprof::mark("filler " + std::to_string(i));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the begin's chunk is let go
  npuprof::range_end(id);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the end is before the window too
  const test::trace t = test::load(npuprof::dump("check"));
  s.stop();
  CHECK(t.named("(began before the window)", "X").empty());
  CHECK(t.count_of("began_before_window") == 0);
  CHECK(t.count_of("outside_window") >= 1);
}

TEST_CASE("a range whose begin the memory cap let go is drawn from where the window is complete") {
  test::temp_dir dir;
  auto cfg = flight_config(dir, 60, /*memory_mb*/ 1);
  cfg.flush_interval_ms = 1;
  cfg.min_duration_us = 100'000;
  npuprof::session s{cfg};
  s.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const npuprof::range_id id = npuprof::range_start("request");
  for (int i = 0; i < 40'000; ++i) {
    npuprof::mark("filler " + std::to_string(i));  // twice the cap
    if (i % 1000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  npuprof::range_end(id);
  const test::trace t = test::load(npuprof::dump("check"));
  s.stop();
  const std::int64_t complete_from = t.meta["collection"]["complete_from_ns"].get<std::int64_t>();
  REQUIRE(complete_from > t.meta["collection"]["window_start_ns"].get<std::int64_t>());  // the cap let go
  const auto slices = t.named("(began before the window)", "X");
  REQUIRE(slices.size() == 1);
  CHECK(test::to_ns(slices[0]["ts"]) >= complete_from - 1000);
  CHECK(t.count_of("began_before_window") == 1);
}

TEST_CASE("dumps taken while the memory cap lets go of records read consistent counts") {
  // Run under ThreadSanitizer too: the drainer lets go while dumps are taken.
  test::temp_dir dir;
  auto cfg = flight_config(dir, 60, /*memory_mb*/ 1);
  cfg.flush_interval_ms = 1;
  npuprof::session s{cfg};
  s.start();
  paced_recorder recorder(1000);
  std::uint64_t evicted = 0;
  for (int i = 0; i < 30; ++i) {
    const test::trace t = test::load(s.dump("evicting"));
    CHECK(t.count_of("evicted_bytes") >= evicted);  // counts since the start: they only grow
    evicted = t.count_of("evicted_bytes");
  }
  recorder.finish();
  s.stop();
  CHECK(evicted > 0);
}

TEST_CASE("a dump's slow on_trace_ready does not hold records the window let go") {
  test::temp_dir dir;
  auto cfg = flight_config(dir, 0.2, /*memory_mb*/ 2);
  cfg.flush_interval_ms = 2;
  bool waited = false;
  cfg.on_trace_ready = [&](const test::fs::path&) {
    if (waited) return;
    waited = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // ~3.6 MB recorded meanwhile
  };
  npuprof::session s{cfg};
  s.start();
  paced_recorder recorder(100);  // about 2.4 MB a second
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  s.dump("slow reader");
  const std::uint64_t ranges = recorder.finish();
  const test::trace t = test::load(s.stop());
  MESSAGE(ranges << " ranges recorded");
  CHECK(waited);
  CHECK(t.count_of("dropped_events") == 0);
}
