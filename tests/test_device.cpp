// Device streams on the simulated Ascend runtime: device slices per stream,
// flows from host to device, clock mapping, pool exhaustion, failing calls
// and fallback to host-only.
#include "support.hpp"

// What this suite checks from the inside.
#include <npuprof/backend/acl_runtime.hpp>
#include <npuprof/backend/event_pool.hpp>
#include <npuprof/engine/asymmetric_fence.hpp>
#include <npuprof/export/trace_view.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <set>
#include <sstream>
#include <thread>

#include "simulated_acl.h"

namespace {

using test::json;

struct kernels {
  static constexpr const char* name = "kernels";
};

constexpr std::uint64_t device_pid = 0x40000000;  // device 0

npuprof::config device_config(const test::temp_dir& dir) {
  npuprof::config cfg = test::config_in(dir);
  cfg.backend = "acl";
  cfg.acl_library = NPUPROF_TEST_SIMULATED_ACL;
  return cfg;
}

aclrtStream new_stream() {
  aclrtStream s = nullptr;
  REQUIRE(aclrtCreateStream(&s) == ACL_SUCCESS);
  return s;
}

std::string hex(const void* p) { return fmt::format("{:#x}", reinterpret_cast<std::uintptr_t>(p)); }

bool on_device(const json& e) { return e["pid"] == device_pid; }

/// Device events (slices or instants) of `stream`, sorted by start.
std::vector<json> device_of(const test::trace& t, const void* stream, const std::string& ph = "X") {
  auto v = t.where([&](const json& e) { return on_device(e) && e["ph"] == ph && e["args"]["stream"] == hex(stream); });
  std::sort(v.begin(), v.end(),
            [](const json& a, const json& b) { return test::to_ns(a["ts"]) < test::to_ns(b["ts"]); });
  return v;
}

std::vector<json> host_of(const test::trace& t, const std::string& name) {
  auto v = t.where([&](const json& e) { return !on_device(e) && e["ph"] == "X" && e["name"] == name; });
  std::sort(v.begin(), v.end(),
            [](const json& a, const json& b) { return test::to_ns(a["ts"]) < test::to_ns(b["ts"]); });
  return v;
}

/// Checks that flows pair host slices with device slices one to one: each
/// "s" sits at the start of a host slice, each "f" at the start of a device
/// slice of the same name... returns the number of pairs.
std::size_t check_flows(const test::trace& t) {
  std::map<std::uint64_t, json> starts, finishes;
  for (const json& e : t.events) {
    if (e["ph"] == "s") CHECK(starts.emplace(e["id"].get<std::uint64_t>(), e).second);
    if (e["ph"] == "f") CHECK(finishes.emplace(e["id"].get<std::uint64_t>(), e).second);
  }
  CHECK(starts.size() == finishes.size());
  // A flow binds to the slice that begins at its time on its track: there
  // must be exactly one.
  auto slice_at = [&](const json& flow) -> json {
    json found = nullptr;
    for (const json& e : t.events) {
      if (e["ph"] == "X" && e["pid"] == flow["pid"] && e["tid"] == flow["tid"] && e["ts"] == flow["ts"]) {
        CHECK_MESSAGE(found.is_null(),
                      "two slices begin where flow " << flow["id"] << " ends or starts: " << found << " and " << e);
        found = e;
      }
    }
    return found;
  };
  std::size_t pairs = 0;
  for (auto& [id, s] : starts) {
    auto f = finishes.find(id);
    REQUIRE(f != finishes.end());
    CHECK(f->second["bp"] == "e");
    const json host = slice_at(s);
    const json dev = slice_at(f->second);
    const std::uint64_t flow = id;  // structured bindings cannot be captured in C++17
    REQUIRE_MESSAGE(!host.is_null(), "flow " << flow << " starts on no host slice");
    REQUIRE_MESSAGE(!dev.is_null(), "flow " << flow << " ends on no device slice");
    CHECK(!on_device(host));
    CHECK(on_device(dev));
    CHECK(host["name"] == dev["name"]);
    if (host["tid"] < 0x40000000) CHECK(dev["args"]["host_tid"] == host["tid"]);  // else a cross-thread track
    ++pairs;
  }
  return pairs;
}

/// Captures what is written to stderr while it lives.
struct stderr_capture {
  test::temp_dir dir;
  int saved = -1;
  stderr_capture() {
    std::fflush(stderr);
    saved = ::dup(2);
    const int fd = ::open((dir.path / "stderr").c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
    ::dup2(fd, 2);
    ::close(fd);
  }
  std::string text() {
    std::fflush(stderr);
    if (saved >= 0) {
      ::dup2(saved, 2);
      ::close(saved);
      saved = -1;
    }
    std::ifstream in(dir.path / "stderr");
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  ~stderr_capture() { text(); }
};

constexpr std::int64_t us = 1000;

}  // namespace

TEST_CASE("stream-tied ranges become device slices on their stream, linked by flows") {
  test::temp_dir dir;
  aclrtStream compute = new_stream();
  aclrtStream copy = new_stream();
  npuprof::name_stream(compute, "compute");
  static const npuprof::registered_string<kernels> gemm{"gemm"};

  npuprof::session s{device_config(dir)};
  s.start();
  // Busy streams: each range's begin event queues behind the previous work,
  // so device durations are the kernels' own, whatever the launch latency.
  npuprof_sim_launch_kernel(compute, 20'000);
  npuprof_sim_launch_kernel(copy, 20'000);
  for (int i = 0; i < 5; ++i) {
    {
      npuprof::scoped_range<kernels> r{gemm, compute};  // registered: one record at the end
      npuprof_sim_launch_kernel(compute, 3000);
    }
    {
      npuprof::scoped_range<kernels> r{std::string("h2d ") + std::to_string(i), copy};  // copied message
      npuprof_sim_launch_kernel(copy, 2000);
    }
    npuprof::mark<kernels>("launched", compute);
  }
  auto t = test::load(s.stop());

  CHECK(t.meta["backend"]["name"] == "acl");
  CHECK(t.meta["backend"]["simulated"] == true);
  CHECK(t.meta["counts"]["device_unresolved"] == 0);
  bool named_simulated = false;
  for (const json& e : t.phase("M")) {
    if (e["pid"] == device_pid && e["name"] == "process_name") {
      named_simulated = e["args"]["name"].get<std::string>().find("simulated") != std::string::npos;
    }
  }
  CHECK(named_simulated);

  const auto gemm_dev = device_of(t, compute);
  const auto gemm_host = host_of(t, "gemm");
  REQUIRE(gemm_dev.size() == 5);
  REQUIRE(gemm_host.size() == 5);
  CHECK(t.thread_name(gemm_dev[0]["tid"]) == "compute");
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(gemm_dev[i]["name"] == "gemm");
    CHECK(gemm_dev[i]["args"]["domain"] == "kernels");
    const std::int64_t dur = test::to_ns(gemm_dev[i]["dur"]);
    CHECK(std::llabs(dur - 3000 * us) < 150 * us);  // within 5%
    // Never before the host asked for it (1 us: the device timestamps' resolution).
    CHECK(test::to_ns(gemm_dev[i]["ts"]) >= test::to_ns(gemm_host[i]["ts"]) - 1 * us);
  }
  // Back to back after the 20 ms of earlier work.
  for (std::size_t i = 1; i < 5; ++i) {
    CHECK(std::llabs(test::to_ns(gemm_dev[i]["ts"]) - test::to_ns(gemm_dev[i - 1]["ts"]) - 3000 * us) < 5 * us);
  }

  const auto copies = device_of(t, copy);
  REQUIRE(copies.size() == 5);
  CHECK(t.thread_name(copies[0]["tid"]) == "Stream 2");
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(copies[i]["name"] == "h2d " + std::to_string(i));
    CHECK(std::llabs(test::to_ns(copies[i]["dur"]) - 2000 * us) < 100 * us);
  }
  CHECK(gemm_dev[0]["tid"] != copies[0]["tid"]);

  // Marks on a stream are device instants on that stream's track.
  const auto marks = device_of(t, compute, "i");
  REQUIRE(marks.size() == 5);
  for (const json& m : marks) {
    CHECK(m["name"] == "launched");
    CHECK(m["tid"] == gemm_dev[0]["tid"]);
  }
  // Each mark follows the kernel launched before it on the stream.
  for (std::size_t i = 0; i < 5; ++i) {
    CHECK(test::to_ns(marks[i]["ts"]) >= test::to_ns(gemm_dev[i]["ts"]) + test::to_ns(gemm_dev[i]["dur"]) - 1 * us);
  }

  CHECK(check_flows(t) == 10);
  test::check_nesting(t);

  // The summary has the device side of stream-tied ranges too.
  std::ifstream csv(t.dir / "range_summary.csv");
  bool device_row = false;
  for (std::string line; std::getline(csv, line);) {
    if (line.rfind("\"kernels\",\"gemm\",device,5,", 0) == 0) {
      device_row = true;
      const double mean = std::stod(line.substr(line.find(',', line.find(",5,") + 3) + 1));
      CHECK(mean == doctest::Approx(3000).epsilon(0.05));
    }
  }
  CHECK(device_row);
  aclrtDestroyStream(compute);
  aclrtDestroyStream(copy);
}

TEST_CASE("the device clock's offset and rate are mapped onto the host clock") {
  test::temp_dir dir;
  aclrtStream st = new_stream();
  npuprof::session s{device_config(dir)};
  s.start();
  const auto host_before = npuprof::steady_ns();
  // The stream is busy when the range begins, so its begin event and its
  // kernel start at the same device instant, whatever the launch latency.
  // 20 ms outlasts the first record on the stream (it creates the stream's
  // event pool), even on a loaded machine under a sanitizer.
  npuprof_sim_launch_kernel(st, 20'000);
  {
    npuprof::scoped_range<kernels> r{"long", st};
    npuprof_sim_launch_kernel(st, 300'000);
  }
  aclrtSynchronizeStream(st);
  auto t = test::load(s.stop());
  const auto dev = device_of(t, st);
  REQUIRE(dev.size() == 1);
  // The device clock runs 150 ppm fast (45 us over this kernel) and is a day
  // ahead: only a mapped time lands here.
  INFO(t.meta["backend"].dump());
  CHECK(std::llabs(test::to_ns(dev[0]["dur"]) - 300'000 * us) < 15 * us);
  const std::int64_t start = test::to_ns(dev[0]["ts"]);
  CHECK(start >= host_before + 20'000 * us - 1 * us);
  CHECK(start - host_before < 22'000 * us);
  CHECK(t.meta["backend"]["timestamps"] == "aclrtEventGetTimestamp");
  const double rate = t.meta["backend"]["clock"]["host_ns_per_device_ns"];
  CHECK(rate == doctest::Approx(1.0 / 1.00015).epsilon(3e-5));
  aclrtDestroyStream(st);
}

TEST_CASE("without aclrtEventGetTimestamp, times come from elapsed time against reference events") {
  test::temp_dir dir;
  aclrtStream st = new_stream();
  npuprof_sim_set_timestamp_supported(0);
  npuprof::session s{device_config(dir)};
  s.start();
  const auto host_before = npuprof::steady_ns();
  npuprof_sim_launch_kernel(st, 20'000);
  for (int i = 0; i < 3; ++i) {
    npuprof::scoped_range<kernels> r{"k", st};
    npuprof_sim_launch_kernel(st, 5000);
  }
  auto t = test::load(s.stop());
  npuprof_sim_set_timestamp_supported(1);
  CHECK(t.meta["backend"]["timestamps"] == "aclrtEventElapsedTime");
  const auto dev = device_of(t, st);
  REQUIRE(dev.size() == 3);
  CHECK(test::to_ns(dev[0]["ts"]) >= host_before + 20'000 * us - 1 * us);
  for (const json& d : dev) CHECK(std::llabs(test::to_ns(d["dur"]) - 5000 * us) < 250 * us);
  CHECK(check_flows(t) == 3);
  aclrtDestroyStream(st);
}

TEST_CASE("ranges begun on one thread and ended on another are tied to the device too") {
  test::temp_dir dir;
  aclrtStream st = new_stream();
  npuprof::session s{device_config(dir)};
  s.start();
  const npuprof::range_id id = npuprof::range_start<kernels>("request", st);
  npuprof_sim_launch_kernel(st, 4000);
  std::thread([&] { npuprof::range_end<kernels>(id, st); }).join();
  {
    npuprof::unique_range<kernels> u{"moved", st};
    npuprof_sim_launch_kernel(st, 1000);
    auto other = std::move(u);
  }
  auto t = test::load(s.stop());
  const auto dev = device_of(t, st);
  REQUIRE(dev.size() == 2);
  CHECK(dev[0]["name"] == "request");
  // The device range holds the kernel and ends when the other thread records
  // its end (after the kernel, or later if that thread was slow to start).
  const auto host = host_of(t, "request");
  REQUIRE(host.size() == 1);
  CHECK(test::to_ns(dev[0]["dur"]) >= 4000 * us - 2 * us);
  CHECK(test::to_ns(dev[0]["ts"]) + test::to_ns(dev[0]["dur"]) <=
        test::to_ns(host[0]["ts"]) + test::to_ns(host[0]["dur"]) + 4000 * us + 2 * us);
  CHECK(dev[1]["name"] == "moved");
  CHECK(check_flows(t) == 2);
  aclrtDestroyStream(st);
}

TEST_CASE("threads that share a stream each get a device slice for every range") {
  test::temp_dir dir;
  aclrtStream st = new_stream();
  npuprof::config cfg = device_config(dir);
  cfg.device_events_per_stream = 1024;  // room for every event: none dropped
  npuprof::session s{cfg};
  s.start();
  constexpr int threads = 4, ranges = 50;
  npuprof_sim_launch_kernel(st, 1000);
  // The first thread creates the stream's pool and owns it; the others
  // start once it exists, and the first of them makes it shared.
  std::atomic<bool> created{false};
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k) {
    pool.emplace_back([&, k] {
      if (k == 0) {
        npuprof::mark<kernels>("first", st);
        created.store(true);
      }
      while (!created.load()) std::this_thread::yield();
      for (int i = 0; i < ranges; ++i) {
        npuprof::scoped_range<kernels> r{"t" + std::to_string(k), st};
        npuprof_sim_launch_kernel(st, 10);
      }
    });
  }
  for (auto& th : pool) th.join();
  auto t = test::load(s.stop());
  const json& events = t.meta["backend"]["device_events"];
  INFO(t.meta["backend"].dump());
  CHECK(events["taken"] == 2 * threads * ranges + 1);
  CHECK(events["dropped_pool_empty"] == 0);
  CHECK(events["dropped_no_pool"] == 0);
  CHECK(t.meta["counts"]["device_unresolved"] == 0);
  const auto dev = device_of(t, st);
  REQUIRE(dev.size() == threads * ranges);
  for (int k = 0; k < threads; ++k) {
    const std::string name = "t" + std::to_string(k);
    CHECK(host_of(t, name).size() == ranges);
    CHECK(std::count_if(dev.begin(), dev.end(), [&](const json& d) { return d["name"] == name; }) == ranges);
  }
  // Each device slice holds at least its own kernel.
  for (const json& d : dev) CHECK(test::to_ns(d["dur"]) >= 10 * us - 1 * us);
  CHECK(check_flows(t) == threads * ranges);
  aclrtDestroyStream(st);
}

TEST_CASE("device slices that begin in the same microsecond get a track each, so every flow ends on its own") {
  // Device timestamps are whole microseconds: ranges of several threads (or
  // nested ranges of one) queued behind the same kernel begin together.
  npuprof::trace_data data;
  data.pid = 7;
  data.strings = {"outer", "inner", "other", "empty", "after"};
  data.domains = {"kernels"};
  auto host = [&](std::uint32_t name, std::uint32_t tid, std::int64_t ts, std::int64_t dur) {
    npuprof::trace_event e;
    e.name = name;
    e.tid = e.end_tid = tid;
    e.ts = ts;
    e.dur = dur;
    e.stream = 0xab;
    data.events.push_back(e);
    return data.events.size() - 1;
  };
  auto device = [&](std::size_t host_event, std::int64_t ts, std::int64_t dur) {
    data.device_events.push_back({host_event, 0xab, ts, dur, false});
  };
  device(host(0, 11, 1 * us, 90 * us), 100 * us, 80 * us);  // outer
  device(host(1, 11, 2 * us, 40 * us), 100 * us, 30 * us);  // nested in it on the host, begins with it
  device(host(2, 12, 3 * us, 20 * us), 100 * us, 10 * us);  // another thread's, begins with both
  device(host(3, 12, 30 * us, 1 * us), 100 * us, 0);        // empty, at the same instant
  device(host(4, 12, 40 * us, 5 * us), 150 * us, 5 * us);   // later: back on the stream's own track
  test::temp_dir dir;
  npuprof::detail::write_trace_view(data, (dir.path / "trace_view.json").string());
  test::trace t;
  t.events = test::read_json(dir.path / "trace_view.json");

  const auto dev = t.where([](const json& e) { return on_device(e) && e["ph"] == "X"; });
  REQUIRE(dev.size() == 5);
  std::set<std::uint64_t> tracks;
  for (const json& d : dev) {
    if (d["name"] != "after") CHECK(tracks.insert(d["tid"].get<std::uint64_t>()).second);
  }
  CHECK(tracks.size() == 4);
  const json& outer = *std::find_if(dev.begin(), dev.end(), [](const json& d) { return d["name"] == "outer"; });
  const json& after = *std::find_if(dev.begin(), dev.end(), [](const json& d) { return d["name"] == "after"; });
  CHECK(after["tid"] == outer["tid"]);
  CHECK(t.thread_name(outer["tid"]) == "Stream 1");
  for (const json& d : dev) {
    if (d["tid"] != outer["tid"]) CHECK(t.thread_name(d["tid"]).rfind("Stream 1 (overlapping ", 0) == 0);
  }
  CHECK(check_flows(t) == 5);
  test::check_nesting(t);
}

TEST_CASE("an empty event pool drops the device part only, and counts it") {
  test::temp_dir dir;
  aclrtStream st = new_stream();
  npuprof::config cfg = device_config(dir);
  cfg.device_events_per_stream = 4;
  npuprof::session s{cfg};
  s.start();
  constexpr int ranges = 20;
  for (int i = 0; i < ranges; ++i) {
    npuprof::scoped_range<kernels> r{"busy", st};
    npuprof_sim_launch_kernel(st, 2000);
  }
  auto t = test::load(s.stop());
  CHECK(host_of(t, "busy").size() == ranges);  // every host event is kept
  const json& events = t.meta["backend"]["device_events"];
  const std::uint64_t taken = events["taken"], dropped = events["dropped_pool_empty"];
  CHECK(dropped > 0);
  CHECK(taken + dropped == 2 * ranges);
  CHECK(t.meta["backend"]["events_per_stream"] == 4);
  const auto dev = device_of(t, st);
  CHECK(!dev.empty());
  CHECK(dev.size() <= taken / 2);
  CHECK(check_flows(t) == dev.size());
  aclrtDestroyStream(st);
}

// A runtime that hands out numbered events, up to a limit, and counts what is
// destroyed: the pool's own arithmetic, without a device.
struct counted_events {
  static inline int limit = 0, created = 0, destroyed = 0;
  static int create(void** ev, std::uint32_t) {
    if (created == limit) return 1;
    *ev = reinterpret_cast<void*>(static_cast<std::uintptr_t>(++created));
    return 0;
  }
  static int destroy(void*) { return ++destroyed, 0; }
  static npuprof::detail::acl_runtime runtime() {
    npuprof::detail::acl_runtime rt;
    rt.create_event_with_flag = create;
    rt.destroy_event = destroy;
    return rt;
  }
};

TEST_CASE("a stream's event pool is a power-of-two ring: taken in order, freed by the resolver") {
  const npuprof::detail::acl_runtime rt = counted_events::runtime();
  using pool = npuprof::detail::event_pool;
  constexpr auto none = npuprof::detail::no_device_event;

  counted_events::limit = 1000;
  auto p = std::make_unique<pool>();
  p->create(rt, 6, true);  // six asked: four kept, two given back
  CHECK(p->capacity() == 4);
  CHECK(counted_events::created == 6);
  CHECK(counted_events::destroyed == 2);
  CHECK(p->is_shared() == !npuprof::detail::asymmetric_fence_available());
  for (std::uint64_t seq = 0; seq < 4; ++seq) CHECK(p->take() == seq);
  CHECK(p->take() == none);  // all four in flight
  bool failed = true;
  CHECK(!p->is_published(0, failed));
  p->publish(0, true);
  p->publish(1, false);
  CHECK(p->is_published(0, failed));
  CHECK(!failed);
  CHECK(p->is_published(1, failed));
  CHECK(failed);
  p->release_before(2);  // frees the slots of 0 and 1 for 4 and 5
  CHECK(p->take() == 4);
  CHECK(p->event(4) == p->event(0));
  CHECK(p->event(5) != p->event(4));
  CHECK(!p->is_published(4, failed));  // slot 0 still holds the publication of 0
  CHECK(p->take() == 5);
  CHECK(p->take() == none);

  // A pool shared from the start takes the same numbers.
  auto shared = std::make_unique<pool>();
  shared->create(rt, 2, false);
  CHECK(shared->is_shared());
  CHECK(shared->take() == 0);
  CHECK(shared->take() == 1);
  CHECK(shared->take() == none);
  shared->release_before(1);
  CHECK(shared->take() == 2);

  counted_events::limit = counted_events::created + 3;  // the device runs out after three
  auto q = std::make_unique<pool>();
  q->create(rt, 256, true);
  CHECK(q->capacity() == 2);
  CHECK(q->status.load() == pool::state::ready);

  counted_events::limit = counted_events::created;  // none left
  auto r = std::make_unique<pool>();
  r->create(rt, 256, true);
  CHECK(r->capacity() == 0);
  CHECK(r->status.load() == pool::state::failed);
}

TEST_CASE("the thread that creates a pool owns it until another thread takes from it") {
  const npuprof::detail::acl_runtime rt = counted_events::runtime();
  using pool = npuprof::detail::event_pool;
  const bool ownable = npuprof::detail::asymmetric_fence_available();
  INFO("asymmetric fence available: " << ownable);
  counted_events::limit = 1 << 30;

  // The owner alone takes without sharing; a second thread switches the pool.
  auto p = std::make_unique<pool>();
  p->create(rt, 64, true);
  for (std::uint64_t seq = 0; seq < 10; ++seq) CHECK(p->take() == seq);
  CHECK(p->is_shared() == !ownable);
  std::uint64_t other = 0;
  std::thread([&] { other = p->take(); }).join();
  CHECK(other == 10);
  CHECK(p->is_shared());
  CHECK(p->take() == 11);

  // The switch while the owner is taking: no number is given twice or skipped.
  constexpr std::uint64_t per_thread = 2000;
  for (int round = 0; round < 200; ++round) {
    auto q = std::make_unique<pool>();
    q->create(rt, 4096, true);
    std::vector<std::uint64_t> mine, theirs;
    std::atomic<std::uint64_t> owner_took{0};
    std::thread second([&] {
      while (owner_took.load() < 100) std::this_thread::yield();
      for (std::uint64_t i = 0; i < per_thread; ++i) theirs.push_back(q->take());
    });
    for (std::uint64_t i = 0; i < per_thread; ++i) {
      mine.push_back(q->take());
      owner_took.store(i + 1);
    }
    second.join();
    CHECK(q->is_shared());
    std::vector<std::uint64_t> all = mine;
    all.insert(all.end(), theirs.begin(), theirs.end());
    std::sort(all.begin(), all.end());
    std::vector<std::uint64_t> expected(2 * per_thread);
    std::iota(expected.begin(), expected.end(), 0);
    REQUIRE(all == expected);
    CHECK(std::is_sorted(mine.begin(), mine.end()));
    CHECK(std::is_sorted(theirs.begin(), theirs.end()));
  }
}

TEST_CASE("a failing runtime call degrades the session to host-only with a message") {
  test::temp_dir dir;
  aclrtStream st = new_stream();
  stderr_capture err;
  npuprof::session s{device_config(dir)};
  s.start();
  { npuprof::scoped_range<kernels> r{"before failure", st}; }  // the stream is checked and timed
  npuprof_sim_fail("aclrtRecordEvent", NPUPROF_SIM_ERROR_INTERNAL, 1);
  for (int i = 0; i < 5; ++i) {
    npuprof::scoped_range<kernels> r{"after failure", st};
    npuprof_sim_launch_kernel(st, 100);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the background thread reports it
  auto t = test::load(s.stop());
  const std::string text = err.text();
  CHECK(host_of(t, "after failure").size() == 5);
  CHECK(device_of(t, st).size() <= 1);  // "before failure" only
  const std::string degraded = t.meta["backend"]["degraded"];
  CHECK(degraded.find("aclrtRecordEvent failed with error 507000") != std::string::npos);
  CHECK(text.find("npuprof: aclrtRecordEvent failed with error 507000") != std::string::npos);

  // The next session has its device timing back.
  npuprof::session again{device_config(dir)};
  again.start();
  {
    npuprof::scoped_range<kernels> r{"recovered", st};
    npuprof_sim_launch_kernel(st, 100);
  }
  auto t2 = test::load(again.stop());
  CHECK(device_of(t2, st).size() == 1);
  CHECK(t2.meta["backend"]["degraded"].is_null());
  aclrtDestroyStream(st);
}

TEST_CASE("a stream the runtime does not know is not timed: host-only markers, counted, no crash") {
  aclrtEvent ev = nullptr;
  REQUIRE(aclrtCreateEventWithFlag(&ev, ACL_EVENT_TIME_LINE) == ACL_SUCCESS);
  void* bogus = reinterpret_cast<void*>(0x1000);
  CHECK(aclrtRecordEvent(ev, bogus) == NPUPROF_SIM_ERROR_INVALID_PARAM);  // refused, not dereferenced
  CHECK(aclrtSynchronizeStream(bogus) == NPUPROF_SIM_ERROR_INVALID_PARAM);
  CHECK(npuprof_sim_launch_kernel(bogus, 10) == NPUPROF_SIM_ERROR_INVALID_PARAM);
  aclrtDestroyEvent(ev);

  test::temp_dir dir;
  aclrtStream st = new_stream();
  stderr_capture err;
  npuprof::session s{device_config(dir)};
  s.start();
  for (int i = 0; i < 3; ++i) {
    npuprof::scoped_range<kernels> r{"on bogus", bogus};
  }
  npuprof::mark<kernels>("bogus mark", bogus);
  {
    npuprof::scoped_range<kernels> r{"on valid", st};
    npuprof_sim_launch_kernel(st, 100);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the background thread reports it
  auto t = test::load(s.stop());
  const std::string text = err.text();
  CHECK(host_of(t, "on bogus").size() == 3);
  CHECK(t.count("bogus mark", "i") == 1);
  CHECK(device_of(t, bogus).empty());
  CHECK(device_of(t, bogus, "i").empty());
  CHECK(device_of(t, st).size() == 1);  // valid streams keep their device timing
  CHECK(t.meta["backend"]["degraded"].is_null());
  CHECK(t.meta["backend"]["device_events"]["dropped_untimed_stream"] == 7);  // 3 ranges x 2, 1 mark
  CHECK(t.meta["backend"]["untimed_streams"] >= 1);
  CHECK(
      text.find("npuprof: stream 0x1000 is not a stream of the runtime (aclrtRecordEvent failed with error 107000)") !=
      std::string::npos);
  aclrtDestroyStream(st);
}

TEST_CASE("a missing or broken runtime library falls back to host-only with one line") {
  test::temp_dir dir;
  int stream_object = 0;
  void* stream = &stream_object;
  for (const std::string& lib : {std::string("/nonexistent/libascendcl.so"), std::string(NPUPROF_TEST_NOT_ACL)}) {
    CAPTURE(lib);
    stderr_capture err;
    npuprof::config cfg = device_config(dir);
    cfg.acl_library = lib;
    auto t = test::record(cfg, [&] {
      npuprof::scoped_range<kernels> r{"host only", stream};
      npuprof::mark<kernels>("m", stream);
    });
    const std::string text = err.text();
    CHECK(t.meta["backend"]["name"] == "host");
    CHECK(t.meta["backend"]["requested"] == "acl");
    const std::string why = t.meta["backend"]["fallback_reason"];
    CHECK(why.find(lib) != std::string::npos);
    CHECK(text.find("npuprof: device backend unavailable: ") != std::string::npos);
    CHECK(std::count(text.begin(), text.end(), '\n') == 1);
    const auto host = host_of(t, "host only");
    REQUIRE(host.size() == 1);
    CHECK(host[0]["args"]["stream"] == hex(stream));  // the stream is still noted
    CHECK(t.where(on_device).empty());
  }
  SUBCASE("the broken library names the missing function") {
    npuprof::config cfg = device_config(dir);
    cfg.acl_library = NPUPROF_TEST_NOT_ACL;
    stderr_capture err;
    auto t = test::record(cfg, [] {});
    CHECK(t.meta["backend"]["fallback_reason"].get<std::string>().find("has no aclrt") != std::string::npos);
  }
}

TEST_CASE("the host backend keeps streams as metadata and loads nothing") {
  test::temp_dir dir;
  aclrtStream st = new_stream();
  npuprof::config cfg = device_config(dir);
  cfg.backend = "host";
  auto t = test::record(cfg, [&] {
    npuprof::scoped_range<kernels> r{"h", st};
    npuprof_sim_launch_kernel(st, 100);
  });
  CHECK(t.meta["backend"]["name"] == "host");
  CHECK(t.where(on_device).empty());
  CHECK(host_of(t, "h").at(0)["args"]["stream"] == hex(st));
  aclrtDestroyStream(st);
}

TEST_CASE("the simulated runtime runs each stream in order and completes events when reached") {
  aclrtStream st = new_stream();
  aclrtEvent a = nullptr, b = nullptr;
  REQUIRE(aclrtCreateEventWithFlag(&a, ACL_EVENT_TIME_LINE) == ACL_SUCCESS);
  REQUIRE(aclrtCreateEventWithFlag(&b, ACL_EVENT_TIME_LINE) == ACL_SUCCESS);
  npuprof_sim_launch_kernel(st, 20'000);  // busy: `a` and the next kernel start together
  REQUIRE(aclrtRecordEvent(a, st) == ACL_SUCCESS);
  npuprof_sim_launch_kernel(st, 20'000);
  REQUIRE(aclrtRecordEvent(b, st) == ACL_SUCCESS);
  aclrtEventRecordedStatus status = ACL_EVENT_RECORDED_STATUS_COMPLETE;
  REQUIRE(aclrtQueryEventStatus(b, &status) == ACL_SUCCESS);
  CHECK(status == ACL_EVENT_RECORDED_STATUS_NOT_READY);
  REQUIRE(aclrtSynchronizeEvent(b) == ACL_SUCCESS);
  float ms = 0;
  REQUIRE(aclrtEventElapsedTime(&ms, a, b) == ACL_SUCCESS);
  CHECK(ms == doctest::Approx(20.003).epsilon(1e-3));  // 20 ms on a clock 150 ppm fast
  std::uint64_t ta = 0, tb = 0;
  REQUIRE(aclrtEventGetTimestamp(a, &ta) == ACL_SUCCESS);
  REQUIRE(aclrtEventGetTimestamp(b, &tb) == ACL_SUCCESS);
  CHECK(tb - ta >= 20'000);
  const std::uint32_t live = npuprof_sim_live_events();
  npuprof_sim_set_event_limit(live);
  aclrtEvent c = nullptr;
  CHECK(aclrtCreateEventWithFlag(&c, ACL_EVENT_TIME_LINE) == NPUPROF_SIM_ERROR_NO_RESOURCE);
  npuprof_sim_set_event_limit(65536);
  aclrtDestroyEvent(a);
  aclrtDestroyEvent(b);
  aclrtDestroyStream(st);
}

namespace {

std::vector<std::vector<std::string>> take_fake_mstx_log() {
  void* lib = ::dlopen(NPUPROF_TEST_FAKE_MSTX, RTLD_NOW);
  REQUIRE(lib != nullptr);
  auto take = reinterpret_cast<const char* (*)()>(::dlsym(lib, "fake_mstx_take_log"));
  REQUIRE(reinterpret_cast<void*>(take) != nullptr);
  std::vector<std::vector<std::string>> lines;
  std::istringstream in(take());
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream f(line);
    for (std::string field; std::getline(f, field, '|');) fields.push_back(field);
    lines.push_back(fields);
  }
  return lines;
}

}  // namespace

TEST_CASE("markers are forwarded to the toolkit's mstx library with message, domain and stream") {
  test::temp_dir dir;
  aclrtStream st = new_stream();
  npuprof::config cfg = device_config(dir);
  cfg.mstx_library = NPUPROF_TEST_FAKE_MSTX;
  static const npuprof::registered_string<kernels> gemm{"gemm"};
  take_fake_mstx_log();

  npuprof::session s{cfg};
  s.start();
  npuprof::mark("plain");
  npuprof::mark<kernels>("on stream", st);
  { npuprof::scoped_range<kernels> r{gemm, st}; }
  { npuprof::scoped_range<> r{std::string("copied")}; }
  const npuprof::range_id id = npuprof::range_start<kernels>("cross", st);
  std::thread([&] { npuprof::range_end<kernels>(id, st); }).join();
  { npuprof::unique_range<kernels> u{"unique"}; }
  auto t = test::load(s.stop());
  npuprof::mark("after stop");  // not recorded, not forwarded

  CHECK(t.meta["backend"]["mstx_forward"]["library"] == NPUPROF_TEST_FAKE_MSTX);
  CHECK(t.count("plain") == 1);
  CHECK(host_of(t, "cross").size() == 1);

  const auto log = take_fake_mstx_log();
  const std::string stream = hex(st);
  auto has = [&](const std::vector<std::string>& want) { return std::count(log.begin(), log.end(), want); };
  CHECK(has({"mark", "plain", "0"}) == 1);
  CHECK(has({"domain_mark", "kernels", "on stream", stream}) == 1);
  CHECK(std::count_if(log.begin(), log.end(), [](auto& l) { return l[0] == "domain_create"; }) <= 1);

  // Every forwarded range ends once, in its domain, with the id it got.
  std::map<std::string, std::vector<std::string>> starts;  // id -> line
  std::map<std::string, int> ends;
  for (const auto& l : log) {
    if (l[0] == "range_start") starts[l[3]] = {"default", l[1], l[2]};
    if (l[0] == "domain_range_start") starts[l[4]] = {l[1], l[2], l[3]};
    if (l[0] == "range_end") {
      CHECK(starts.count(l[1]) == 1);
      if (starts.count(l[1])) CHECK(starts[l[1]][0] == "default");
      ++ends[l[1]];
    }
    if (l[0] == "domain_range_end") {
      CHECK(starts.count(l[2]) == 1);
      if (starts.count(l[2])) CHECK(starts[l[2]][0] == l[1]);
      ++ends[l[2]];
    }
  }
  std::multiset<std::string> seen;
  for (const auto& start : starts) {
    const std::vector<std::string>& what = start.second;
    const int n = ends[start.first];
    CHECK_MESSAGE(n == 1, what[1] << " ended " << n << " times");
    seen.insert(what[0] + "|" + what[1] + "|" + what[2]);
  }
  const std::multiset<std::string> expected = {"kernels|gemm|" + stream, "default|copied|0", "kernels|cross|" + stream,
                                               "kernels|unique|0"};
  CHECK(seen == expected);
  aclrtDestroyStream(st);
}

TEST_CASE("forwarding can be switched off, and is off without a toolkit library") {
  test::temp_dir dir;
  npuprof::config cfg = device_config(dir);
  cfg.mstx_library = NPUPROF_TEST_FAKE_MSTX;
  cfg.mstx_forward = false;
  take_fake_mstx_log();
  auto t = test::record(cfg, [] { npuprof::mark("quiet"); });
  CHECK(t.count("quiet") == 1);
  CHECK(take_fake_mstx_log().empty());
  CHECK(!t.meta["backend"].contains("mstx_forward"));

  cfg.mstx_forward = true;
  cfg.mstx_library = "/nonexistent/libms_tools_ext.so";
  auto t2 = test::record(cfg, [] { npuprof::mark("quiet"); });
  CHECK(t2.meta["backend"]["mstx_forward"]["library"].is_null());
  CHECK(t2.meta["backend"]["mstx_forward"]["reason"].get<std::string>().find("/nonexistent") != std::string::npos);
}

TEST_CASE("schedule cycles and flight recorder dumps carry their device slices") {
  static const npuprof::registered_string<kernels> gemm{"gemm"};
  aclrtStream stream = new_stream();
  auto launch_ranges = [&](int n) {
    npuprof_sim_launch_kernel(stream, 5'000);  // busy stream
    for (int i = 0; i < n; ++i) {
      npuprof::scoped_range<kernels> r{gemm, stream};
      npuprof_sim_launch_kernel(stream, 500);
    }
    REQUIRE(aclrtSynchronizeStream(stream) == ACL_SUCCESS);
  };
  SUBCASE("schedule: each cycle has the device slices of its own steps") {
    test::temp_dir dir;
    auto cfg = device_config(dir);
    cfg.schedule = npuprof::schedule{/*wait*/ 1, /*active*/ 1};
    std::vector<test::fs::path> cycles;
    cfg.on_trace_ready = [&](const test::fs::path& p) { cycles.push_back(p); };
    npuprof::session s{cfg};
    s.start();
    for (int step = 0; step < 4; ++step) {
      launch_ranges(step + 1);
      s.step();
    }
    s.stop();
    REQUIRE(cycles.size() == 2);
    for (std::size_t c = 0; c < 2; ++c) {
      const test::trace t = test::load(cycles[c]);
      const std::size_t expected = c == 0 ? 2 : 4;  // steps 1 and 3 recorded
      CHECK(host_of(t, "gemm").size() == expected);
      CHECK(device_of(t, stream).size() == expected);
      CHECK(check_flows(t) == expected);
      CHECK(t.count_of("device_unresolved") == 0);
    }
  }
  SUBCASE("flight recorder: two dumps, both with every device slice of the window") {
    test::temp_dir dir;
    auto cfg = device_config(dir);
    cfg.flight.enabled = true;
    cfg.flight.window_s = 60;
    npuprof::session s{cfg};
    s.start();
    launch_ranges(10);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // resolved by the background thread
    const test::trace a = test::load(s.dump("first"));
    launch_ranges(5);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const test::trace b = test::load(s.dump("second"));
    s.cancel();
    CHECK(device_of(a, stream).size() == 10);
    CHECK(check_flows(a) == 10);
    CHECK(device_of(b, stream).size() == 15);
    CHECK(check_flows(b) == 15);
    CHECK(b.count_of("device_unresolved") == 0);
  }
}
