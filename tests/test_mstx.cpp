// The mstx injection library, driven through the ABI by a loader that plays
// the mstx header: each case runs in a child process that loads the library,
// makes mstx calls and exits; the parent reads the trace it wrote.
#include "support.hpp"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "mstx_loader.hpp"

namespace {

/// Runs `body` in a child process with the given environment, after loading
/// the injection library, and returns the trace it wrote at exit.
test::trace run_child(const test::temp_dir& dir, const std::vector<std::pair<const char*, const char*>>& env,
                      const std::function<void(mstx_loader&)>& body) {
  return test::trace_of_child(dir, [&] {
    ::setenv("NPUPROF_OUTPUT_DIR", dir.path.c_str(), 1);
    ::unsetenv("NPUPROF_CONFIG");
    for (auto& [k, v] : env) ::setenv(k, v, 1);
    mstx_loader mstx;
    if (mstx.load() != MSTX_SUCCESS) std::_Exit(3);
    body(mstx);
  });
}

/// Runs `body` in a child process with its stderr in `err`, and returns its
/// exit status; a child still running after `limit` is killed and fails the
/// test (a hang must not hang the suite).
int exit_code_of_child(const test::temp_dir& dir, const test::fs::path& err,
                       const std::vector<std::pair<const char*, const char*>>& env, const std::function<void()>& body,
                       std::chrono::seconds limit = std::chrono::seconds(120)) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    test_in_forked_child = true;
    if (std::freopen(err.c_str(), "w", stderr) == nullptr) std::_Exit(6);
    ::setenv("NPUPROF_OUTPUT_DIR", dir.path.c_str(), 1);
    ::unsetenv("NPUPROF_CONFIG");
    for (auto& [k, v] : env) ::setenv(k, v, 1);
    body();
    std::exit(0);
  }
  const int status = test::child_status(pid, static_cast<int>(limit.count()));
  if (status == -1) FAIL("the child process hung");
  REQUIRE(WIFEXITED(status));
  return WEXITSTATUS(status);
}

/// The one output directory in `dir`.
test::fs::path only_output(const test::temp_dir& dir) {
  std::vector<test::fs::path> outputs;
  for (auto& e : test::fs::directory_iterator(dir.path)) outputs.push_back(e.path());
  REQUIRE(outputs.size() == 1);
  return outputs[0];
}

/// As exit_code_of_child(), for a child that must exit 0; returns the trace it wrote.
test::trace run_child_within(const test::temp_dir& dir, const test::fs::path& err,
                             const std::vector<std::pair<const char*, const char*>>& env,
                             const std::function<void()>& body, std::chrono::seconds limit = std::chrono::seconds(30)) {
  REQUIRE(exit_code_of_child(dir, err, env, body, limit) == 0);
  return test::load(only_output(dir));
}

std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The acl backend on the simulated runtime, forwarding to the stand-in
// toolkit library, which itself loads MSTX_INJECTION_PATH (npuprof).
const std::vector<std::pair<const char*, const char*>> forwarding_env = {
    {"NPUPROF_BACKEND", "acl"},
    {"NPUPROF_ACL_LIBRARY", NPUPROF_TEST_SIMULATED_ACL},
    {"NPUPROF_MSTX_LIBRARY", NPUPROF_TEST_FAKE_MSTX},
    {"NPUPROF_MSTX_FORWARD", "1"}};

}  // namespace

TEST_CASE("a toolkit library that loads npuprof itself is not forwarded to: no hang, each marker once") {
  test::temp_dir dir, err_dir;
  const test::fs::path err = err_dir.path / "stderr";
  auto t = run_child_within(dir, err, forwarding_env, [] {
    mstx_loader mstx;
    if (mstx.load() != MSTX_SUCCESS) std::_Exit(3);
    mstx.mark("first");
    mstx.range_end(mstx.range_start("range"));
    mstxDomainHandle_t comm = mstx.domain_create("comm");
    mstx.domain_mark(comm, "comm mark");
  });
  CHECK(t.count("first", "i") == 1);
  CHECK(t.count("range", "X") == 1);
  CHECK(t.count("comm mark", "i") == 1);
  CHECK(t.meta["backend"]["name"] == "acl");
  const auto& fwd = t.meta["backend"]["mstx_forward"];
  CHECK(fwd["library"].is_null());
  CHECK(fwd["reason"].get<std::string>().find("loads npuprof's mstx injection library itself") != std::string::npos);
  const std::string text = test::read_text(err);
  INFO(text);
  CHECK(occurrences(text, "npuprof: markers not forwarded: ") == 1);
  CHECK(occurrences(text, "forwarding would loop\n") == 1);
}

TEST_CASE("the toolkit library that loaded npuprof is not forwarded to, and its markers are recorded once") {
  test::temp_dir dir, err_dir;
  const test::fs::path err = err_dir.path / "stderr";
  auto t = run_child_within(dir, err, forwarding_env, [] {
    // The program calls the toolkit library, which loads npuprof on this first call.
    void* lib = ::dlopen(NPUPROF_TEST_FAKE_MSTX, RTLD_NOW);
    if (lib == nullptr) std::_Exit(3);
    auto mark = reinterpret_cast<mstxMarkA_t>(::dlsym(lib, "mstxMarkA"));
    auto start = reinterpret_cast<mstxRangeStartA_t>(::dlsym(lib, "mstxRangeStartA"));
    auto end = reinterpret_cast<mstxRangeEnd_t>(::dlsym(lib, "mstxRangeEnd"));
    auto tool = reinterpret_cast<mstxGetToolId_t>(::dlsym(lib, "mstxGetToolId"));
    mark("first", nullptr);
    end(start("range", nullptr));
    std::uint64_t id = 0;
    tool(&id);
    if (id != NPUPROF_MSTX_TOOL_ID) std::_Exit(4);  // npuprof is its tool
  });
  CHECK(t.count("first", "i") == 1);
  CHECK(t.count("range", "X") == 1);
  const auto& fwd = t.meta["backend"]["mstx_forward"];
  CHECK(fwd["library"].is_null());
  CHECK(fwd["reason"].get<std::string>().find("is the library that loaded npuprof") != std::string::npos);
  const std::string text = test::read_text(err);
  INFO(text);
  CHECK(occurrences(text, "npuprof: markers not forwarded: ") == 1);
}

TEST_CASE("threads that find npuprof in the function table are recorded from their first call") {
  // One thread loads the library while threads are started one after
  // another; each makes its range as soon as it finds the table filled.
  test::temp_dir dir2, err_dir;
  auto t2 = run_child_within(dir2, err_dir.path / "stderr", {}, [] {
    mstx_loader mstx;
    std::atomic<int> failures{0};
    std::thread loading([&] {
      if (mstx.load() != MSTX_SUCCESS) failures.fetch_add(1);
    });
    std::vector<std::thread> threads;
    for (int i = 0; i < 100; ++i) {
      threads.emplace_back([&] {
        while (!mstx.has_range_start()) std::this_thread::yield();
        const mstxRangeId id = mstx.range_start("early");
        if (id == 0) failures.fetch_add(1);
        mstx.range_end(id);
      });
    }
    loading.join();
    for (auto& th : threads) th.join();
    if (failures.load() != 0) std::_Exit(7);
  });
  CHECK(t2.count("early", "X") == 100);
  CHECK(t2.count_of("unmatched_range_ends") == 0);
}

TEST_CASE("marks, ranges and domains from several threads, with ends on other threads") {
  test::temp_dir dir;
  std::vector<std::uint64_t> ids;
  auto t = run_child(dir, {}, [](mstx_loader& mstx) {
    CHECK(mstx.tool_id() == NPUPROF_MSTX_TOOL_ID);
    mstxDomainHandle_t comm = mstx.domain_create("comm");
    REQUIRE(comm != nullptr);
    CHECK(mstx.domain_create("comm") == comm);  // same name, same handle
    std::vector<mstxRangeId> handed(4);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&, i] {
        const std::string n = std::to_string(i);
        mstx.mark(("mark " + n).c_str());
        const mstxRangeId r = mstx.range_start(("range " + n).c_str());
        mstx.domain_mark(comm, ("comm mark " + n).c_str());
        const mstxRangeId dr = mstx.domain_range_start(comm, ("comm range " + n).c_str());
        mstx.domain_range_end(comm, dr);
        mstx.range_end(r);
        handed[static_cast<std::size_t>(i)] = mstx.range_start(("handed " + n).c_str());
      });
    }
    for (auto& th : threads) th.join();
    std::thread([&] {  // ends ranges begun on four other threads
      for (mstxRangeId id : handed) mstx.range_end(id);
    })
        .join();
    std::set<mstxRangeId> unique(handed.begin(), handed.end());
    if (unique.size() != 4 || unique.count(0) != 0) std::_Exit(4);  // ids unique, non-zero
    mstx.mark("on stream", reinterpret_cast<aclrtStream>(0x1234));
    mstx.domain_range_end(comm, mstx.domain_range_start(comm, "comm on stream", reinterpret_cast<aclrtStream>(0x5678)));
  });
  CHECK(t.named("on stream", "i").at(0)["args"]["stream"] == "0x1234");
  CHECK(t.named("comm on stream", "X").at(0)["args"]["stream"] == "0x5678");
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i);
    CHECK(t.named("mark " + n, "i").at(0)["args"]["domain"] == "default");
    CHECK(t.named("range " + n, "X").at(0)["args"]["domain"] == "default");
    CHECK(t.named("comm mark " + n, "i").at(0)["args"]["domain"] == "comm");
    CHECK(t.named("comm range " + n, "X").at(0)["args"]["domain"] == "comm");
    const auto handed = t.named("handed " + n, "X").at(0);
    CHECK(handed["args"]["end_tid"] != handed["args"].value("tid", 0));
    // Drawn on a cross-thread track, it names the thread that began it: the
    // one whose track holds "range n", which is named in the trace.
    const auto begun_on = t.named("range " + n, "X").at(0)["tid"];
    REQUIRE(handed["args"].contains("begin_tid"));
    CHECK(handed["args"]["begin_tid"] == begun_on);
    CHECK(handed["args"]["end_tid"] != begun_on);
    CHECK(t.thread_name(begun_on.get<std::uint64_t>()) != "");
    CHECK_FALSE(handed["args"].contains("incomplete"));
  }
  test::check_nesting(t);
  CHECK(t.count_of("unmatched_range_ends") == 0);
}

TEST_CASE("domain filters from the environment apply to mstx calls") {
  test::temp_dir dir;
  auto t = run_child(dir, {{"NPUPROF_DOMAIN_EXCLUDE", "comm"}}, [](mstx_loader& mstx) {
    mstxDomainHandle_t comm = mstx.domain_create("comm");
    mstxDomainHandle_t io = mstx.domain_create("io");
    mstx.domain_mark(comm, "comm mark");
    mstx.domain_mark(io, "io mark");
    const mstxRangeId r = mstx.domain_range_start(comm, "comm range");
    mstx.domain_range_end(comm, r);  // 0: nothing
    mstx.mark("default mark");
  });
  CHECK(t.count("comm mark") == 0);
  CHECK(t.count("comm range") == 0);
  CHECK(t.count("io mark") == 1);
  CHECK(t.count("default mark") == 1);
  CHECK(t.count_of("unmatched_range_ends") == 0);
}

TEST_CASE("bad domain names, messages and ids are refused or counted, never a crash") {
  test::temp_dir dir;
  auto t = run_child(dir, {}, [](mstx_loader& mstx) {
    const std::string too_long(1024, 'a');
    const std::string longest(1023, 'a');
    int refused = 0;
    for (const char* bad :
         {static_cast<const char*>(nullptr), "", "has-dash", "has space", "default", too_long.c_str()}) {
      refused += mstx.domain_create(bad) == nullptr;
    }
    if (refused != 6 || mstx.domain_create(longest.c_str()) == nullptr) std::_Exit(5);
    mstx.mark(nullptr);
    mstx.range_end(0);
    mstx.range_end(987654321);  // never started
    const mstxRangeId r = mstx.range_start(std::string(600, 'x').c_str());
    mstx.range_end(r);
    mstx.range_end(r);  // repeated
  });
  CHECK(t.count_of("rejected_domain_names") == 6);
  CHECK(t.count_of("null_messages") == 1);
  CHECK(t.count_of("unmatched_range_ends") == 1);
  CHECK(t.count_of("repeated_range_ends") == 1);
  CHECK(t.count_of("truncated_messages") == 1);
  CHECK(t.count(std::string(255, 'x'), "X") == 1);
}

TEST_CASE("exit() from another thread while ranges are open writes a complete trace that reports them") {
  test::temp_dir dir;
  auto t = run_child(dir, {}, [](mstx_loader& mstx) {
    std::atomic<bool> stop{false};
    std::thread busy([&] {
      // Busy, within bounds: on a loaded machine the sleep below may last
      // seconds, and an unbounded loop would fill the whole cap meanwhile.
      for (long i = 0; !stop.load(); ++i) {
        if (i % 256 == 0) std::this_thread::sleep_for(std::chrono::microseconds(i < 100'000 ? 50 : 1000));
        const mstxRangeId r = mstx.range_start("busy");
        mstx.range_end(r);
      }
    });
    mstx.range_start("open at exit 1");
    mstx.range_start("open at exit 2");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::thread([] { std::exit(0); }).join();  // never returns
  });
  CHECK(t.named("open at exit 1").at(0)["args"]["incomplete"] == true);
  CHECK(t.named("open at exit 2").at(0)["args"]["incomplete"] == true);
  CHECK(t.count_of("open_ranges") >= 2);
  CHECK(t.count("busy", "X") > 0);
  MESSAGE(t.count("busy", "X") << " busy ranges, " << t.events.size() << " events");
}

TEST_CASE("a missing or too small function table is refused") {
  for (int which = 0; which < 2; ++which) {
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      test_in_forked_child = true;
      mstx_loader mstx;
      (which == 0 ? mstx.core_size : mstx.domain_size) = 3;
      std::_Exit(mstx.load() == MSTX_FAIL ? 0 : 1);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
}

TEST_CASE("a NULL domain is the default domain") {
  test::temp_dir dir;
  auto t = run_child(dir, {}, [](mstx_loader& mstx) {
    mstx.domain_mark(nullptr, "null domain mark");
    const mstxRangeId id = mstx.domain_range_start(nullptr, "null domain range");
    if (id == 0) std::_Exit(4);
    mstx.domain_range_end(nullptr, id);
    mstx.domain_range_end(nullptr, mstx.range_start("default range, ended through NULL"));
  });
  CHECK(t.named("null domain mark", "i").at(0)["args"]["domain"] == "default");
  CHECK(t.named("null domain range", "X").at(0)["args"]["domain"] == "default");
  CHECK_FALSE(t.named("null domain range", "X").at(0)["args"].contains("incomplete"));
  CHECK(t.named("default range, ended through NULL", "X").at(0)["args"]["domain"] == "default");
  CHECK(t.count_of("unmatched_range_ends") == 0);
}

TEST_CASE("a destroyed domain records nothing, returns 0, warns once and counts; creating it again revives it") {
  test::temp_dir dir, err_dir;
  const test::fs::path err = err_dir.path / "stderr";
  auto t = run_child_within(dir, err, {}, [] {
    mstx_loader mstx;
    if (mstx.load() != MSTX_SUCCESS) std::_Exit(3);
    mstxDomainHandle_t comm = mstx.domain_create("comm");
    const mstxRangeId open = mstx.domain_range_start(comm, "begun before destroy");
    mstx.domain_destroy(comm);
    mstx.domain_mark(comm, "after destroy");
    mstx.domain_mark(comm, "after destroy");
    if (mstx.domain_range_start(comm, "range after destroy") != 0) std::_Exit(4);
    mstx.domain_range_end(comm, open);  // ranges begun before still end
    mstxDomainHandle_t again = mstx.domain_create("comm");
    if (again == nullptr) std::_Exit(5);
    mstx.domain_mark(again, "recreated");
    mstx.domain_range_end(again, mstx.domain_range_start(again, "recreated range"));
  });
  CHECK(t.count("after destroy") == 0);
  CHECK(t.count("range after destroy") == 0);
  CHECK(t.count("begun before destroy", "X") == 1);
  CHECK_FALSE(t.named("begun before destroy", "X").at(0)["args"].contains("incomplete"));
  CHECK(t.named("recreated", "i").at(0)["args"]["domain"] == "comm");
  CHECK(t.count("recreated range", "X") == 1);
  CHECK(t.count_of("destroyed_domain_calls") == 3);
  CHECK(t.count_of("unmatched_range_ends") == 0);
  const std::string text = test::read_text(err);
  INFO(text);
  CHECK(occurrences(text, "destroyed domain 'comm'") == 1);
}

TEST_CASE("stream-tied mstx ranges get their device slice and flow, though mstxRangeEnd names no stream") {
  test::temp_dir dir;
  const std::vector<std::pair<const char*, const char*>> device_env = {
      {"NPUPROF_BACKEND", "acl"},
      {"NPUPROF_ACL_LIBRARY", NPUPROF_TEST_SIMULATED_ACL},
      {"NPUPROF_DEVICE_EVENTS_PER_STREAM", "1024"}};  // room for every event of a stream
  auto t = run_child(dir, device_env, [](mstx_loader& mstx) {
    // The program's runtime: the one npuprof loaded (same path, same library).
    void* acl = ::dlopen(NPUPROF_TEST_SIMULATED_ACL, RTLD_NOW);
    if (acl == nullptr) std::_Exit(5);
    auto create = reinterpret_cast<int (*)(void**)>(::dlsym(acl, "aclrtCreateStream"));
    auto launch = reinterpret_cast<int (*)(void*, std::uint32_t)>(::dlsym(acl, "npuprof_sim_launch_kernel"));
    auto sync = reinterpret_cast<int (*)(void*)>(::dlsym(acl, "aclrtSynchronizeStream"));
    std::vector<std::thread> threads;
    std::vector<mstxRangeId> handed(4);
    for (int i = 0; i < 4; ++i) {
      threads.emplace_back([&, i] {
        void* stream = nullptr;
        if (create(&stream) != 0) std::_Exit(6);
        for (int k = 0; k < 100; ++k) {
          const mstxRangeId r = mstx.range_start("kernel", stream);
          launch(stream, 20);
          mstx.range_end(r);
          mstx.mark("queued", stream);
        }
        handed[static_cast<std::size_t>(i)] = mstx.range_start("handed", stream);
        launch(stream, 20);
        sync(stream);
      });
    }
    for (auto& th : threads) th.join();
    std::thread([&] {  // ends the stream-tied ranges begun on four other threads
      for (mstxRangeId id : handed) mstx.range_end(id);
    })
        .join();
  });
  const auto on_device = t.where([](const test::json& e) { return e["pid"] == 0x40000000 && e["ph"] == "X"; });
  std::size_t kernels = 0, handed = 0;
  for (const auto& e : on_device) {
    kernels += e["name"] == "kernel";
    handed += e["name"] == "handed";
  }
  CHECK(kernels == 400);
  CHECK(handed == 4);
  CHECK(t.where([](const test::json& e) { return e["pid"] == 0x40000000 && e["ph"] == "i"; }).size() == 400);
  CHECK(t.phase("s").size() == 404);  // a flow from each host range to its device slice
  CHECK(t.phase("f").size() == 404);
  CHECK(t.count_of("device_unpaired") == 0);
  CHECK(t.count_of("device_unresolved") == 0);
  const auto& events = t.meta["backend"]["device_events"];
  CHECK(events["taken"] == 2 * 404 + 400);  // every pool slot is in the trace
  CHECK(events["dropped_pool_empty"] == 0);
}

namespace {

/// The metadata of the one trace in `dir`, and the text of its events (not
/// parsed: some of these traces hold a million events).
struct meta_only {
  test::json meta;
  std::string events;
};

meta_only read_meta(const test::temp_dir& dir) {
  const test::fs::path out = only_output(dir);
  return {test::read_json(out / "profiler_metadata.json"), test::read_text(out / "trace_view.json")};
}

}  // namespace

TEST_CASE(
    "range ids fit in 32 bits: a caller that keeps them in a uint32_t, as mstx's Python binding does, ends every "
    "range") {
  test::temp_dir dir, err_dir;
  const int code = exit_code_of_child(dir, err_dir.path / "stderr", {}, [] {
    mstx_loader mstx;
    if (mstx.load() != MSTX_SUCCESS) std::_Exit(3);
    std::atomic<int> failure{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) {
      threads.emplace_back([&] {
        for (int k = 0; k < 50000; ++k) {
          const mstxRangeId outer = mstx.range_start("outer");
          const mstxRangeId inner = mstx.range_start("inner");
          if (outer == 0 || inner == 0 || outer == inner) failure.store(4);
          if (outer > 0xffffffffu || inner > 0xffffffffu) failure.store(5);
          const std::uint32_t kept_inner = static_cast<std::uint32_t>(inner);
          const std::uint32_t kept_outer = static_cast<std::uint32_t>(outer);
          mstx.range_end(kept_inner);
          mstx.range_end(kept_outer);
        }
      });
    }
    for (auto& th : threads) th.join();
    if (failure.load() != 0) std::_Exit(failure.load());
  });
  REQUIRE(code == 0);  // 4: an id was 0 or repeated among open ranges; 5: an id above 2^32
  const meta_only t = read_meta(dir);
  CHECK(occurrences(t.events, "\"name\":\"outer\"") == 400000);
  CHECK(occurrences(t.events, "\"name\":\"inner\"") == 400000);
  CHECK(t.meta["counts"]["unmatched_range_ends"] == 0);
  CHECK(t.meta["counts"]["repeated_range_ends"] == 0);
  CHECK(t.meta["counts"]["open_ranges"] == 0);
  CHECK(t.meta["counts"]["dropped_events"] == 0);
}

TEST_CASE("more mstx ranges open at once than ids for them: the ones past the limit are counted and stay open") {
  test::temp_dir dir, err_dir;
  const test::fs::path err = err_dir.path / "stderr";
  const int code = exit_code_of_child(dir, err, {}, [] {
    mstx_loader mstx;
    if (mstx.load() != MSTX_SUCCESS) std::_Exit(3);
    std::set<mstxRangeId> ids;
    std::size_t zero = 0;
    for (int k = 0; k < 140000; ++k) {
      const mstxRangeId id = mstx.range_start("leaked");
      if (id == 0) {
        ++zero;
      } else if (!ids.insert(id).second || id > 0xffffffffu) {
        std::_Exit(4);
      }
    }
    if (zero != 140000 - 131072) std::_Exit(5);
    for (mstxRangeId id : ids) mstx.range_end(id);  // the places are free again
    if (mstx.range_start("after") == 0) std::_Exit(6);
  });
  REQUIRE(code == 0);
  const meta_only t = read_meta(dir);
  CHECK(t.meta["counts"]["mstx_ranges_over_limit"] == 140000 - 131072);
  CHECK(t.meta["counts"]["open_ranges"] == 140000 - 131072 + 1);
  CHECK(t.meta["counts"]["unmatched_range_ends"] == 0);
  const std::string text = test::read_text(err);
  INFO(text);
  CHECK(occurrences(text, "131072 mstx ranges are open") == 1);
}

TEST_CASE("domain handles mstxDomainCreateA did not return are ignored and counted, never a crash") {
  test::temp_dir dir, err_dir;
  const test::fs::path err = err_dir.path / "stderr";
  auto t = run_child_within(dir, err, {}, [] {
    mstx_loader mstx;
    if (mstx.load() != MSTX_SUCCESS) std::_Exit(3);
    mstxDomainHandle_t comm = mstx.domain_create("comm");
    char on_stack[64] = {};
    void* on_heap = std::malloc(64);
    std::memset(on_heap, 0xff, 64);
    const std::vector<mstxDomainHandle_t> foreign = {
        reinterpret_cast<mstxDomainHandle_t>(on_stack),
        reinterpret_cast<mstxDomainHandle_t>(on_heap),
        reinterpret_cast<mstxDomainHandle_t>(std::uintptr_t{1}),
        reinterpret_cast<mstxDomainHandle_t>(std::uintptr_t{16}),
        reinterpret_cast<mstxDomainHandle_t>(std::uintptr_t{4096}),
        reinterpret_cast<mstxDomainHandle_t>(reinterpret_cast<char*>(comm) + 1),  // inside a real handle
        reinterpret_cast<mstxDomainHandle_t>(reinterpret_cast<char*>(comm) + (1 << 20)),
        reinterpret_cast<mstxDomainHandle_t>(~std::uintptr_t{0})};
    for (mstxDomainHandle_t h : foreign) {
      mstx.domain_mark(h, "foreign mark");
      if (mstx.domain_range_start(h, "foreign range") != 0) std::_Exit(4);
      // A real range ended through a foreign handle still ends.
      mstx.domain_range_end(h, mstx.domain_range_start(comm, "real range"));
      mstx.domain_destroy(h);
    }
    std::free(on_heap);
    mstx.domain_mark(comm, "comm still records");
    mstx.domain_destroy(comm);
    mstx.domain_mark(comm, "after destroy");
  });
  CHECK(t.count("foreign mark") == 0);
  CHECK(t.count("foreign range") == 0);
  CHECK(t.count("real range", "X") == 8);
  CHECK(t.count("comm still records", "i") == 1);
  CHECK(t.count_of("foreign_domain_handles") == 8 * 4);
  CHECK(t.count_of("destroyed_domain_calls") == 1);
  CHECK(t.count_of("unmatched_range_ends") == 0);
  const std::string text = test::read_text(err);
  INFO(text);
  CHECK(occurrences(text, "not a handle mstxDomainCreateA returned") == 1);
}

namespace {
mstx_loader* g_exit_mstx = nullptr;
void mark_at_exit() {
  if (g_exit_mstx != nullptr) {
    g_exit_mstx->mark("from an exit handler");
    g_exit_mstx->range_end(g_exit_mstx->range_start("range in an exit handler"));
  }
}
}  // namespace

TEST_CASE("marks from an exit handler registered before the first mstx call are in the trace") {
  test::temp_dir dir, err_dir;
  auto t = run_child_within(dir, err_dir.path / "stderr", {}, [] {
    std::atexit(&mark_at_exit);  // runs after every handler registered later
    g_exit_mstx = new mstx_loader();
    if (g_exit_mstx->load() != MSTX_SUCCESS) std::_Exit(3);
    g_exit_mstx->mark("in main");
  });
  CHECK(t.count("in main", "i") == 1);
  CHECK(t.count("from an exit handler", "i") == 1);
  CHECK(t.count("range in an exit handler", "X") == 1);
}

TEST_CASE("a fork() child that makes mstx calls writes its own trace; the parent's is whole") {
  if (test::thread_sanitizer) {
    // The parent records, so it has npuprof's thread: ThreadSanitizer lets no
    // fork() child of a multi-threaded process start the child's session thread.
    MESSAGE("under ThreadSanitizer a fork() child's own session is not checked");
    return;
  }
  test::temp_dir dir, err_dir;
  const test::fs::path err = err_dir.path / "stderr";
  const int code = exit_code_of_child(dir, err, {}, [] {
    mstx_loader mstx;
    if (mstx.load() != MSTX_SUCCESS) std::_Exit(3);
    mstx.mark("parent before fork");
    const mstxRangeId across = mstx.range_start("parent range across the fork");
    const pid_t pid = ::fork();
    if (pid < 0) std::_Exit(4);
    if (pid == 0) {
      std::thread other([&] {
        for (int i = 0; i < 50; ++i) mstx.mark("child");
      });
      for (int i = 0; i < 50; ++i) mstx.mark("child");
      other.join();
      mstx.range_end(mstx.range_start("child range"));
      std::exit(0);
    }
    for (int i = 0; i < 10; ++i) mstx.mark("parent after fork");
    mstx.range_end(across);
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) std::_Exit(5);
  });
  REQUIRE(code == 0);
  std::vector<test::trace> traces;
  for (auto& e : test::fs::directory_iterator(dir.path)) traces.push_back(test::load(e.path()));
  REQUIRE(traces.size() == 2);
  const bool first_is_child = traces[0].count("child") > 0;
  const test::trace& child = traces[first_is_child ? 0 : 1];
  const test::trace& parent = traces[first_is_child ? 1 : 0];
  CHECK(child.count("child", "i") == 100);
  CHECK(child.count("child range", "X") == 1);
  CHECK(child.count("parent before fork") == 0);
  CHECK(child.count("parent after fork") == 0);
  CHECK(parent.count("child") == 0);
  CHECK(parent.count("parent before fork", "i") == 1);
  CHECK(parent.count("parent after fork", "i") == 10);
  CHECK(parent.count("parent range across the fork", "X") == 1);
  CHECK(parent.count_of("open_ranges") == 0);
  CHECK(child.meta["pid"] != parent.meta["pid"]);
  CHECK(child.dir.filename().string().find("_" + child.meta["pid"].dump() + "_") != std::string::npos);
  const std::string text = test::read_text(err);
  INFO(text);
  CHECK(occurrences(text, "trace written to") == 2);
}

TEST_CASE("threads that hold many ranges open at once all get ids, up to near the limit") {
  test::temp_dir dir, err_dir;
  const int code = exit_code_of_child(dir, err_dir.path / "stderr", {}, [] {
    mstx_loader mstx;
    if (mstx.load() != MSTX_SUCCESS) std::_Exit(3);
    std::atomic<int> failure{0};
    for (int round = 0; round < 2; ++round) {
      std::vector<std::thread> threads;
      for (int i = 0; i < 16; ++i) {
        threads.emplace_back([&] {
          std::vector<std::uint32_t> open;  // 16 x 7,000: 112,000 open at once
          for (int k = 0; k < 7000; ++k) open.push_back(static_cast<std::uint32_t>(mstx.range_start("held")));
          for (std::uint32_t id : open) {
            if (id == 0) failure.store(4);
            mstx.range_end(id);
          }
        });
      }
      for (auto& th : threads) th.join();
    }
    if (failure.load() != 0) std::_Exit(failure.load());
  });
  CHECK(code == 0);  // 4: a range got no id
  const meta_only t = read_meta(dir);
  CHECK(t.meta["counts"]["mstx_ranges_over_limit"] == 0);
  CHECK(t.meta["counts"]["open_ranges"] == 0);
  CHECK(occurrences(t.events, "\"name\":\"held\"") == 2 * 16 * 7000);
}

TEST_CASE("a fork() while another thread creates and destroys domains: the child's calls do not hang") {
  test::temp_dir dir, err_dir;
  const int code = exit_code_of_child(dir, err_dir.path / "stderr", {}, [] {
    mstx_loader mstx;
    if (mstx.load() != MSTX_SUCCESS) std::_Exit(3);
    std::atomic<bool> stop{false};
    std::thread churn([&] {
      for (int i = 0; !stop.load(); ++i) {
        mstxDomainHandle_t d = mstx.domain_create(("churn_" + std::to_string(i % 50)).c_str());
        mstx.domain_mark(d, "churn");
        mstx.domain_destroy(d);
      }
    });
    int hung = 0;
    for (int k = 0; k < 30; ++k) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        mstxDomainHandle_t d = mstx.domain_create("child_domain");
        mstx.domain_mark(d, "child");
        ::_exit(0);  // this case is about hangs: no child trace
      }
      hung += test::child_status(pid, 20) == -1;
    }
    stop.store(true);
    churn.join();
    if (hung != 0) std::_Exit(4);
  });
  CHECK(code == 0);  // 4: a child hung
}
