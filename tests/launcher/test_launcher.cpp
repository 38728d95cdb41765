// npuprof-run, run as a user runs it: a separate process, on programs that
// know nothing of npuprof. Each case reads what it printed and the traces it
// listed.
#include "../support.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>

namespace {

struct run_result {
  int status = 0;
  std::string out, err;
  std::vector<test::fs::path> traces;  // the directories npuprof-run listed

  int code() const { return WIFEXITED(status) ? WEXITSTATUS(status) : -1; }
};

/// Starts npuprof-run with `args`, its output in files under `io`; `during`
/// runs while it does (given its pid).
run_result launch(const test::temp_dir& io, std::vector<std::string> args,
                  const std::function<void(pid_t)>& during = nullptr, int limit_s = 60) {
  args.insert(args.begin(), NPUPROF_TEST_LAUNCHER);
  const test::fs::path out = io.path / "stdout", err = io.path / "stderr";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    test_in_forked_child = true;
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0) ::_exit(120);
    ::unsetenv("MSTX_INJECTION_PATH");
    ::unsetenv("NPUPROF_CONFIG");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(121);
  }
  if (during) during(pid);
  run_result r;
  r.status = test::child_status(pid, limit_s);
  REQUIRE(r.status != -1);
  r.out = test::read_text(out);
  r.err = test::read_text(err);
  static const std::regex listed("npuprof-run: trace written to (.*)");
  for (std::sregex_iterator it(r.err.begin(), r.err.end(), listed), end; it != end; ++it)
    r.traces.emplace_back((*it)[1].str());
  return r;
}

// Waits until `file` holds `text` (a program says it is ready).
bool wait_for_text(const test::fs::path& file, const std::string& text, int limit_s = 30) {
  for (int i = 0; i < limit_s * 100; ++i) {
    if (test::fs::exists(file) && test::read_text(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("npuprof-run captures a C program's mstx markers and says where the trace went") {
  test::temp_dir io, out;
  const run_result r = launch(io, {"-o", out.path.string(), "--", NPUPROF_TEST_MSTX_APP});
  INFO(r.err);
  REQUIRE(r.code() == 0);
  CHECK(r.out.find("mstx_app: done") != std::string::npos);  // the program's own output passes through
  REQUIRE(r.traces.size() == 1);
  CHECK(r.traces[0].parent_path() == out.path);
  const test::trace t = test::load(r.traces[0]);
  CHECK(t.count("start", "i") == 1);
  CHECK(t.count("done", "i") == 1);
  CHECK(t.count("matmul", "X") == 4);
  CHECK(t.count("step 3", "X") == 1);
}

TEST_CASE("npuprof-run's options reach the capture: database, domain filters") {
  test::temp_dir io, out;
  const run_result r = launch(io, {"--output=" + out.path.string(), "--export", "text,db", "--exclude", "operators",
                                   "--", NPUPROF_TEST_MSTX_APP});
  INFO(r.err);
  REQUIRE(r.code() == 0);
  REQUIRE(r.traces.size() == 1);
  const test::trace t = test::load(r.traces[0]);
  CHECK(t.count("matmul") == 0);  // the excluded domain
  CHECK(t.count("step 0", "X") == 1);
  bool has_db = false;
  for (auto& e : test::fs::recursive_directory_iterator(r.traces[0])) has_db |= e.path().extension() == ".db";
  CHECK(has_db == NPUPROF_TEST_HAS_DATABASE);
}

TEST_CASE("npuprof-run exits with the program's status, and its trace is written") {
  test::temp_dir io, out;
  const run_result r = launch(io, {"-o", out.path.string(), "--", NPUPROF_TEST_PROBE, "exit", "42"});
  INFO(r.err);
  CHECK(r.code() == 42);
  REQUIRE(r.traces.size() == 1);
  CHECK(test::load(r.traces[0]).count("before exit", "i") == 1);
}

TEST_CASE("npuprof-run passes a signal on to the program") {
  test::temp_dir io, out;
  SUBCASE("one the program handles: it ends as it chooses, its trace written") {
    const run_result r = launch(io, {"-o", out.path.string(), "--", NPUPROF_TEST_PROBE, "signal"}, [&](pid_t pid) {
      REQUIRE(wait_for_text(io.path / "stdout", "ready"));
      ::kill(pid, SIGUSR2);
    });
    INFO(r.err);
    CHECK(r.code() == 7);
    REQUIRE(r.traces.size() == 1);
    CHECK(test::load(r.traces[0]).count("got SIGUSR2", "i") == 1);
  }
  SUBCASE("one that kills it: npuprof-run ends killed by the same signal, and says no trace was written") {
    const run_result r = launch(io, {"-o", out.path.string(), "--", NPUPROF_TEST_PROBE, "signal"}, [&](pid_t pid) {
      REQUIRE(wait_for_text(io.path / "stdout", "ready"));
      ::kill(pid, SIGTERM);
    });
    INFO(r.err);
    REQUIRE(WIFSIGNALED(r.status));
    CHECK(WTERMSIG(r.status) == SIGTERM);
    CHECK(r.traces.empty());
    CHECK(r.err.find("npuprof-run: no trace written") != std::string::npos);
  }
}

TEST_CASE("npuprof-run lists the trace of each process of a program that forks") {
  if (test::sanitized) {
    // The sanitizers' allocators keep no lock across fork(): a child forked
    // while another thread (the parent's drainer) allocates can hang in the
    // sanitizer's own allocator as it starts a thread (seen in 5 of 25 runs).
    MESSAGE("not under a sanitizer: its allocator's lock may be copied held into the child");
    return;
  }
  test::temp_dir io, out;
  const run_result r = launch(io, {"-o", out.path.string(), "--", NPUPROF_TEST_PROBE, "fork", "100"});
  INFO(r.err);
  REQUIRE(r.code() == 0);
  REQUIRE(r.traces.size() == 2);
  std::size_t child_marks = 0, parent_marks = 0;
  for (const auto& dir : r.traces) {
    const test::trace t = test::load(dir);
    child_marks += t.count("child mark", "i");
    parent_marks += t.count("parent", "i");
    CHECK((t.count("child mark") == 0 || t.count("parent") == 0));  // each process its own trace
  }
  CHECK(child_marks == 100);
  CHECK(parent_marks == 1);
}

TEST_CASE("npuprof-run waits for the processes a program leaves running, unless told not to") {
  test::temp_dir io, out;
  SUBCASE("--wait all (the default): the daemon's trace is listed") {
    const run_result r = launch(io, {"-o", out.path.string(), "--", NPUPROF_TEST_PROBE, "daemon", "20"});
    INFO(r.err);
    CHECK(r.code() == 0);
    REQUIRE(r.traces.size() == 2);  // the program's and the daemon's
    std::size_t marks = 0;
    for (const auto& dir : r.traces) marks += test::load(dir).count("daemon mark", "i");
    CHECK(marks == 20);
  }
  SUBCASE("--wait primary: npuprof-run ends with the program and says what still runs") {
    const run_result r =
        launch(io, {"--wait", "primary", "-o", out.path.string(), "--", NPUPROF_TEST_PROBE, "daemon", "20"});
    INFO(r.err);
    CHECK(r.code() == 0);
    REQUIRE(r.traces.size() == 1);  // the program's
    CHECK(test::load(r.traces[0]).count("before daemon", "i") == 1);
    CHECK(r.err.find("processes it started still run") != std::string::npos);
    // The daemon's trace is written all the same, later.
    auto daemon_trace = [&] {
      for (auto& e : test::fs::directory_iterator(out.path)) {
        if (e.path() != r.traces[0] && test::fs::exists(e.path() / "profiler_metadata.json")) return true;
      }
      return false;
    };
    // Not under a sanitizer: the forked daemon may hang in its allocator
    // (see the forking program's case above).
    if (!test::sanitized) {
      for (int i = 0; i < 1000 && !daemon_trace(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      CHECK(daemon_trace());
    }
  }
}

TEST_CASE("npuprof-run runs the program when it has no place for the list of traces") {
  test::temp_dir io, out;
  test::scoped_env tmp("TMPDIR", (io.path / "no-such-dir").c_str());
  const run_result r = launch(io, {"-o", out.path.string(), "--", NPUPROF_TEST_PROBE, "exit", "5"});
  INFO(r.err);
  CHECK(r.code() == 5);
  CHECK(r.traces.size() == 1);  // listed through /tmp
}

TEST_CASE("npuprof-run refuses bad options and says which, and what it cannot run") {
  test::temp_dir io;
  SUBCASE("unknown option") {
    const run_result r = launch(io, {"--bogus", "--", NPUPROF_TEST_PROBE, "marks", "1"});
    CHECK(r.code() == 2);
    CHECK(r.err.find("unknown option '--bogus'") != std::string::npos);
    CHECK(r.err.find("usage: npuprof-run") != std::string::npos);
  }
  SUBCASE("bad value") {
    const run_result r = launch(io, {"--export", "xml", "--", NPUPROF_TEST_PROBE, "marks", "1"});
    CHECK(r.code() == 2);
    CHECK(r.err.find("'--export': expected text, db or text,db, got 'xml'") != std::string::npos);
  }
  SUBCASE("missing value") {
    const run_result r = launch(io, {"-o"});
    CHECK(r.code() == 2);
    CHECK(r.err.find("option '-o' needs a value") != std::string::npos);
  }
  SUBCASE("bad --wait") {
    const run_result r = launch(io, {"--wait", "some", "--", NPUPROF_TEST_PROBE, "marks", "1"});
    CHECK(r.code() == 2);
    CHECK(r.err.find("'--wait': expected all or primary, got 'some'") != std::string::npos);
  }
  SUBCASE("no program") {
    const run_result r = launch(io, {"-o", io.path.string(), "--"});
    CHECK(r.code() == 2);
    CHECK(r.err.find("no program to run") != std::string::npos);
  }
  SUBCASE("a program that is not there") {
    const run_result r = launch(io, {"--", (io.path / "no-such-program").string()});
    CHECK(r.code() == 127);
    CHECK(r.err.find("cannot run '" + (io.path / "no-such-program").string() + "'") != std::string::npos);
  }
  SUBCASE("no injection library") {
    const run_result r =
        launch(io, {"--library", (io.path / "missing.so").string(), "--", NPUPROF_TEST_PROBE, "marks", "1"});
    CHECK(r.code() == 2);
    CHECK(r.err.find("no injection library at") != std::string::npos);
  }
}
