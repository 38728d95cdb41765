// The mstx injection library, driven through the ABI by a loader that plays
// the mstx header: each case runs in a child process that loads the library,
// makes mstx calls and exits; the parent reads the trace it wrote.
#include "support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
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

}  // namespace


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
    }).join();
    std::set<mstxRangeId> unique(handed.begin(), handed.end());
    if (unique.size() != 4 || unique.count(0) != 0) std::_Exit(4);  // ids unique, non-zero
    mstx.mark("on stream", reinterpret_cast<aclrtStream>(0x1234));
    mstx.domain_range_end(comm, mstx.domain_range_start(comm, "comm on stream", reinterpret_cast<aclrtStream>(0x5678)));
    mstx.domain_destroy(comm);
    mstx.domain_mark(comm, "after destroy");  // handles stay valid
  });
  CHECK(t.named("on stream", "i").at(0)["args"]["stream"] == "0x1234");
  CHECK(t.named("comm on stream", "X").at(0)["args"]["stream"] == "0x5678");
  CHECK(t.count("after destroy", "i") == 1);
  for (int i = 0; i < 4; ++i) {
    const std::string n = std::to_string(i);
    CHECK(t.named("mark " + n, "i").at(0)["args"]["domain"] == "default");
    CHECK(t.named("range " + n, "X").at(0)["args"]["domain"] == "default");
    CHECK(t.named("comm mark " + n, "i").at(0)["args"]["domain"] == "comm");
    CHECK(t.named("comm range " + n, "X").at(0)["args"]["domain"] == "comm");
    const auto handed = t.named("handed " + n, "X").at(0);
    CHECK(handed["args"]["end_tid"] != handed["args"].value("tid", 0));
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
    for (const char* bad : {static_cast<const char*>(nullptr), "", "has-dash", "has space", "default",
                            too_long.c_str()}) {
      refused += mstx.domain_create(bad) == nullptr;
    }
    if (refused != 6 || mstx.domain_create(longest.c_str()) == nullptr) std::_Exit(5);
    mstx.mark(nullptr);
    mstx.domain_mark(nullptr, "null domain");  // ignored
    mstx.range_end(0);
    mstx.range_end(987654321);  // never started
    const mstxRangeId r = mstx.range_start(std::string(600, 'x').c_str());
    mstx.range_end(r);
    mstx.range_end(r);  // repeated
  });
  CHECK(t.count_of("rejected_domain_names") == 6);
  CHECK(t.count_of("null_messages") == 1);
  CHECK(t.count("null domain") == 0);
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
      for (long i = 0; !stop.load(); ++i) {
        if (i % 256 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
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
