// Sessions: start/stop rules, output directory, drops, thread exit, the
// clock, and a session still running when the process exits.
#include "support.hpp"

// What this suite checks from the inside.
#include <npuprof/engine/state.hpp>
#include <npuprof/export/file.hpp>
#include <npuprof/export/output_dir.hpp>
#include <npuprof/export/trace_view.hpp>

#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

namespace {

struct kernels {
  static constexpr const char* name = "kernels";
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const npuprof::error& e) {
    return e.what();
  }
  return "(no error)";
}

// The child's exit code, or -1 (killed by a signal, or hung).
int wait_for_child(pid_t pid, int seconds) {
  const int status = test::child_status(pid, seconds);
  return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The signal that ended the child, 0 for a normal exit, -1 for a hang.
int signal_of_child(pid_t pid, int seconds) {
  const int status = test::child_status(pid, seconds);
  if (status == -1) return -1;
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

std::vector<test::fs::path> outputs_in(const test::temp_dir& dir) {
  std::vector<test::fs::path> out;
  for (auto& e : test::fs::directory_iterator(dir.path)) {
    if (e.is_directory()) out.push_back(e.path());
  }
  return out;
}

}  // namespace

TEST_CASE("one session at a time; stop needs a running session") {
  test::temp_dir dir;
  npuprof::session a{test::config_in(dir)};
  npuprof::session b{test::config_in(dir)};
  CHECK(error_of([&] { a.stop(); }) == "npuprof: cannot stop the session: it is not running");
  a.start();
  CHECK(error_of([&] { a.start(); }) == "npuprof: cannot start the session: it is already running");
  CHECK(error_of([&] { b.start(); }).find("another session is already running") != std::string::npos);
  a.stop();
  b.start();  // now it may
  npuprof::mark("in b");
  auto t = test::load(b.stop());
  CHECK(t.count("in b") == 1);
}

TEST_CASE("the output directory is named {worker}_{pid}_{timestamp}_ascend_pt, as torch_npu names its own") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.worker_name = "rank3";
  npuprof::session s{cfg};
  s.start();
  const auto out = s.stop();
  CHECK(out.parent_path() == test::fs::absolute(dir.path));
  CHECK(out.is_absolute());
  const std::regex pattern("rank3_" + std::to_string(::getpid()) + "_[0-9]{17}_ascend_pt");
  CHECK_MESSAGE(std::regex_match(out.filename().string(), pattern), out);
  CHECK(std::filesystem::exists(out / "trace_view.json"));
  CHECK(std::filesystem::exists(out / "profiler_metadata.json"));
  CHECK(s.trace_id().size() == 32);
  CHECK(test::load(out).meta["trace_id"] == s.trace_id());
}

TEST_CASE("a full buffer drops events and counts them exactly; none are lost silently") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.chunk_size_kb = 1;
  cfg.buffer_size_kb = 4;  // four chunks of 120 words: a few hundred events
  cfg.flush_interval_ms = 60000;
  constexpr int n = 5000;
  std::uint64_t tid = 0;
  auto t = test::record(cfg, [&] {
    // A new thread: its first chunk comes from this session's small pool.
    std::thread([&] {
      tid = npuprof::detail::os_thread_id();
      for (int i = 0; i < n; ++i) NPUPROF_MARK(kernels, "m");
    }).join();
  });
  const std::size_t kept = t.count("m", "i");
  const std::uint64_t dropped = t.count_of("dropped_events");
  CHECK(kept > 100);
  CHECK(kept < 1000);
  CHECK(kept + dropped == n);
  CHECK(t.meta["counts"]["dropped_by_thread"][std::to_string(tid)] == dropped);
}

TEST_CASE("events of threads that exited before stop are in the trace") {
  test::temp_dir dir;
  std::vector<std::uint64_t> tids(8);
  auto t = test::record(test::config_in(dir), [&] {
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < tids.size(); ++i) {
      threads.emplace_back([&, i] {
        tids[i] = npuprof::detail::os_thread_id();
        npuprof::name_thread("short-lived " + std::to_string(i));
        for (int k = 0; k < 100; ++k) NPUPROF_RANGE(kernels, "work");
        npuprof::mark("bye " + std::to_string(i));
      });
    }
    for (auto& th : threads) th.join();
  });
  CHECK(t.count("work", "X") == 800);
  for (std::size_t i = 0; i < tids.size(); ++i) {
    const auto bye = t.named("bye " + std::to_string(i));
    REQUIRE(bye.size() == 1);
    CHECK(bye[0]["tid"] == tids[i]);
    CHECK(t.thread_name(tids[i]) == "short-lived " + std::to_string(i));
  }
}

TEST_CASE("many short-lived threads reuse buffers and lose nothing") {
  test::temp_dir dir;
  auto t = test::record(test::config_in(dir), [&] {
    for (int round = 0; round < 50; ++round) {
      std::vector<std::thread> threads;
      for (int i = 0; i < 4; ++i) threads.emplace_back([] { NPUPROF_MARK(kernels, "hello"); });
      for (auto& th : threads) th.join();
    }
  });
  CHECK(t.count("hello") == 200);
  CHECK(t.count_of("dropped_events") == 0);
}

TEST_CASE("exported times agree with steady_clock within 1% over one second") {
  test::temp_dir dir;
  std::int64_t before = 0, after = 0;
  auto t = test::record(test::config_in(dir), [&] {
    npuprof::scoped_range<kernels> r{"one second"};
    before = npuprof::steady_ns();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    after = npuprof::steady_ns();
  });
  const auto ev = t.named("one second").at(0);
  const std::int64_t measured = after - before;
  const std::int64_t dur = test::to_ns(ev["dur"]);
  CHECK(std::abs(static_cast<double>(dur - measured)) < 0.01 * static_cast<double>(measured));
  // Timestamps are steady_clock microseconds: the slice brackets our reads.
  const std::int64_t ts = test::to_ns(ev["ts"]);
  CHECK(std::abs(static_cast<double>(ts - before)) < 0.01 * static_cast<double>(measured));
  CHECK(t.meta["clock"]["source"] == npuprof::raw_clock_name);
#if defined(__aarch64__)
  CHECK(t.meta["clock"]["source"] == "cntvct_el0");  // the counter, not the steady_clock fallback
#elif defined(__x86_64__)
  CHECK(t.meta["clock"]["source"] == "tsc");
#endif
  CHECK(t.meta["clock"]["ns_per_tick"].get<double>() > 0);
}

TEST_CASE("an output directory that cannot be written is a clear error, and the data can be written elsewhere") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.output_dir = (dir.path / "out").string();
  npuprof::session s{cfg};
  s.start();
  npuprof::mark("kept");
  // Gone while the session ran, and a file in its place.
  test::fs::remove(cfg.output_dir);
  std::ofstream(cfg.output_dir) << "x";
  const std::string msg = error_of([&] { s.stop(); });
  CHECK_MESSAGE(msg.find("cannot create output directory '" + cfg.output_dir + "'") != std::string::npos, msg);
  CHECK_FALSE(s.running());
  auto t = test::load(s.write_to(dir.path.string()));
  CHECK(t.count("kept") == 1);
}

TEST_CASE("output directory problems show at start(), before anything starts") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  const auto blocker = dir.path / "not-a-directory";
  std::ofstream(blocker) << "x";
  cfg.output_dir = (blocker / "sub").string();
  {
    npuprof::session s{cfg};
    const std::string msg = error_of([&] { s.start(); });
    CHECK_MESSAGE(msg.rfind("npuprof: cannot create output directory '" + cfg.output_dir + "': ", 0) == 0, msg);
    CHECK_FALSE(s.running());
    CHECK(npuprof::detail::state().active.load() == nullptr);
  }
  cfg.output_dir = blocker.string();
  {
    npuprof::session s{cfg};
    const std::string msg = error_of([&] { s.start(); });
    CHECK_MESSAGE(msg.find("output directory '" + cfg.output_dir + "'") != std::string::npos, msg);
    CHECK_FALSE(s.running());
  }
  if (::geteuid() != 0) {  // root may write anywhere
    const auto locked = dir.path / "read-only";
    test::fs::create_directory(locked);
    test::fs::permissions(locked, test::fs::perms::owner_read | test::fs::perms::owner_exec);
    cfg.output_dir = locked.string();
    npuprof::session s{cfg};
    CHECK_EQ(error_of([&] { s.start(); }),
             "npuprof: output directory '" + cfg.output_dir + "' is not writable: " + std::strerror(EACCES));
    test::fs::permissions(locked, test::fs::perms::owner_all);
  }
  // A directory that is missing is made then; the session runs.
  cfg.output_dir = (dir.path / "made" / "at" / "start").string();
  npuprof::session s{cfg};
  s.start();
  CHECK(test::fs::is_directory(cfg.output_dir));
  s.cancel();
}

namespace {

// The YYYYmmddHHMMSSmmm of an output directory's name.
std::string stamp_of(const test::fs::path& dir) {
  std::smatch m;
  const std::string name = dir.filename().string();
  REQUIRE_MESSAGE(std::regex_search(name, m, std::regex("_([0-9]{17})_ascend_pt$")), name);
  return m[1];
}

std::string stamp_at(std::int64_t wall_ns) { return stamp_of(npuprof::detail::output_dir_name("w", 1, wall_ns)); }

}  // namespace

TEST_CASE("a directory is named for when it is written; the metadata keeps when the session started") {
  test::temp_dir dir;
  npuprof::session s{test::config_in(dir)};
  const std::int64_t before = npuprof::wall_ns();
  s.start();
  npuprof::mark("m");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  const auto dumped = s.dump("a second later");
  const auto stopped = s.stop();
  CHECK(stamp_of(dumped) >= stamp_at(before + 1'000'000'000));
  CHECK(stamp_of(stopped) >= stamp_of(dumped));
  for (const auto& out : {dumped, stopped}) {
    const std::int64_t wall_start = test::load(out).meta["clock"]["wall_start_ns"];
    CHECK(wall_start >= before - 1'000'000);
    CHECK(wall_start < before + 500'000'000);
  }
}

TEST_CASE("1500 dumps of one running session all succeed, each into its own directory") {
  test::temp_dir dir;
  npuprof::session s{test::config_in(dir)};
  s.start();
  std::set<test::fs::path> written;
  for (int i = 0; i < 1500; ++i) {
    npuprof::mark("m");
    const auto out = s.dump("dump " + std::to_string(i));
    REQUIRE_MESSAGE(written.insert(out).second, out);
  }
  const auto last = s.stop();
  CHECK(written.insert(last).second);
  CHECK(outputs_in(dir).size() == 1501);
  CHECK(test::load(last).count("m") == 1500);
}

TEST_CASE("names of one millisecond get a counter on the pid, with no limit on how many") {
  test::temp_dir dir;
  const std::int64_t when = npuprof::wall_ns();
  const std::string plain = npuprof::detail::output_dir_name("w", 7, when);
  const std::string tail = plain.substr(std::string("w_7").size());  // _{timestamp}_ascend_pt
  for (int i = 0; i < 5000; ++i) {
    npuprof::detail::output_directory out = npuprof::detail::make_output_dir(dir.path.string(), "w", 7, when);
    REQUIRE(out.path().filename() == (i == 0 ? plain : "w_7." + std::to_string(i) + tail));
    REQUIRE(test::fs::is_directory(out.path()));
    // The Ascend tools read the third field from the end, split on '_', as the time.
    const std::string name = out.path().filename().string();
    std::vector<std::string> fields;
    for (std::size_t at = 0, next; at <= name.size(); at = next + 1) {
      next = std::min(name.find('_', at), name.size());
      fields.push_back(name.substr(at, next - at));
    }
    REQUIRE(fields.size() >= 3);
    REQUIRE(fields[fields.size() - 3] == stamp_of(out.path()));
  }
  CHECK(outputs_in(dir).size() == 5000);
}

TEST_CASE("a file or a symlink at a predicted name is passed over, never followed") {
  test::temp_dir dir, elsewhere;
  const auto precious = elsewhere.path / "precious";
  std::ofstream(precious) << "original";
  auto plant = [&](const std::string& name, int kind) {
    const auto at = dir.path / name;
    if (kind == 0) std::ofstream(at) << "planted";
    if (kind == 1) test::fs::create_symlink(elsewhere.path / "missing", at);  // dangling
    if (kind == 2) test::fs::create_directory_symlink(elsewhere.path, at);    // to a directory
    if (kind == 3) test::fs::create_symlink(precious, at);                    // to a file
  };
  // Directly: each kind at the names of one instant.
  const std::int64_t when = npuprof::wall_ns();
  for (int k = 0; k < 4; ++k) plant(npuprof::detail::output_dir_name("w", 7, when, static_cast<unsigned>(k)), k);
  const auto out = npuprof::detail::make_output_dir(dir.path.string(), "w", 7, when);
  CHECK(out.path().filename() == npuprof::detail::output_dir_name("w", 7, when, 4));
  CHECK(test::fs::is_directory(test::fs::symlink_status(out.path())));

  // Through a session: every name of the next three seconds is taken.
  auto cfg = test::config_in(dir);
  cfg.worker_name = "planted";
  const std::int64_t now = npuprof::wall_ns();
  for (int ms = -5; ms < 3000; ++ms) {
    plant(npuprof::detail::output_dir_name("planted", static_cast<std::uint32_t>(::getpid()), now + ms * 1'000'000LL),
          (ms + 5) % 4);
  }
  npuprof::session s{cfg};
  s.start();
  npuprof::mark("written");
  const auto written = s.stop();
  CHECK_MESSAGE(written.filename().string().size() > 10, written);
  CHECK_MESSAGE(written.filename().string().rfind("planted_" + std::to_string(::getpid()) + ".1_", 0) == 0, written);
  CHECK(test::fs::is_directory(test::fs::symlink_status(written)));
  CHECK(test::load(written).count("written") == 1);
  // Nothing went where the symlinks point.
  std::vector<std::string> there;
  for (auto& e : test::fs::directory_iterator(elsewhere.path)) there.push_back(e.path().filename().string());
  CHECK(there == std::vector<std::string>{"precious"});
  std::ifstream in(precious);
  CHECK(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) == "original");
}

TEST_CASE("output directories are 0750 and their files 0640, whatever the umask") {
  test::temp_dir dir;
  const ::mode_t old = ::umask(0);
  npuprof::session s{test::config_in(dir)};
  s.start();
  npuprof::mark("m");
  const auto out = s.stop();
  ::umask(old);
  struct ::stat st {};
  REQUIRE(::stat(out.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0750);
  std::size_t files = 0;
  for (auto& e : test::fs::directory_iterator(out)) {
    CAPTURE(e.path());
    REQUIRE(::lstat(e.path().c_str(), &st) == 0);
    CHECK(S_ISREG(st.st_mode));
    CHECK((st.st_mode & 07777) == 0640);
    ++files;
  }
  CHECK(files == 4);  // trace_view.json, profiler_metadata.json, range_summary.csv, profiler_info.json
}

TEST_CASE("files are created only anew, never through a symlink; a directory swapped for a symlink is not followed") {
  test::temp_dir dir, elsewhere;
  const auto precious = elsewhere.path / "precious";
  std::ofstream(precious) << "original";
  test::fs::create_symlink(precious, dir.path / "trace_view.json");
  test::fs::create_symlink(elsewhere.path / "missing", dir.path / "range_summary.csv");
  auto in_dir = npuprof::detail::output_directory::open_existing(dir.path);
  CHECK_EQ(error_of([&] { npuprof::detail::write_file(in_dir, "trace_view.json", "replaced"); }),
           "npuprof: cannot create '" + (dir.path / "trace_view.json").string() + "': " + std::strerror(EEXIST));
  CHECK_EQ(error_of([&] { npuprof::detail::write_file(in_dir, "range_summary.csv", "created"); }),
           "npuprof: cannot create '" + (dir.path / "range_summary.csv").string() + "': " + std::strerror(EEXIST));
  CHECK_EQ(error_of([&] {
             npuprof::detail::write_trace_view(npuprof::trace_data{}, (dir.path / "trace_view.json").string());
           }),
           "npuprof: cannot create '" + (dir.path / "trace_view.json").string() + "': " + std::strerror(EEXIST));
  CHECK(test::fs::is_symlink(dir.path / "trace_view.json"));
  CHECK_FALSE(test::fs::exists(elsewhere.path / "missing"));
  {
    std::ifstream in(precious);
    CHECK(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) == "original");
  }

  // Made, then moved away and a symlink put in its place: files still go
  // into the directory made, and discarding removes them and nothing else.
  auto made = npuprof::detail::make_output_dir(dir.path.string(), "swap", 1, npuprof::wall_ns());
  const auto moved = dir.path / "moved";
  test::fs::rename(made.path(), moved);
  test::fs::create_directory_symlink(elsewhere.path, made.path());
  npuprof::detail::write_file(made, "profiler_metadata.json", "{}\n");
  CHECK(test::fs::exists(moved / "profiler_metadata.json"));
  CHECK_FALSE(test::fs::exists(elsewhere.path / "profiler_metadata.json"));
  made.discard();
  CHECK(test::fs::is_empty(moved));
  CHECK(test::fs::is_symlink(made.path()));
  std::vector<std::string> there;
  for (auto& e : test::fs::directory_iterator(elsewhere.path)) there.push_back(e.path().filename().string());
  CHECK(there == std::vector<std::string>{"precious"});
}

TEST_CASE("a worker name cannot leave output_dir") {
  using npuprof::detail::safe_worker_name;
  CHECK(safe_worker_name("../../evil") == ".._.._evil");
  CHECK(safe_worker_name("a/b") == "a_b");
  CHECK(safe_worker_name(".") == "_");
  CHECK(safe_worker_name("..") == "_");
  CHECK(safe_worker_name("node 1:\xc3\xbc") == "node_1___");
  CHECK(safe_worker_name("rank-0.host_A") == "rank-0.host_A");
  CHECK(safe_worker_name("") == safe_worker_name(npuprof::detail::host_name()));
  CHECK(safe_worker_name(std::string(300, 'x')).size() == 128);

  test::temp_dir dir;
  const auto out = dir.path / "a" / "b";
  for (const char* worker : {"../../evil", "a/b", "..", "/abs"}) {
    CAPTURE(worker);
    auto cfg = test::config_in(dir);
    cfg.output_dir = out.string();
    {
      test::scoped_env name("NPUPROF_WORKER_NAME", worker);
      test::scoped_env config_file("NPUPROF_CONFIG", nullptr);
      cfg.apply_env();
    }
    npuprof::session s{cfg};
    s.start();
    const auto written = s.stop();
    CHECK(written.parent_path() == test::fs::absolute(out));
    CHECK(written.filename().string().rfind(safe_worker_name(worker) + "_" + std::to_string(::getpid()) + "_", 0) == 0);
  }
  // Nothing anywhere else: the tree holds a/b and the four directories in it.
  auto names_in = [](const test::fs::path& p) {
    std::vector<std::string> names;
    for (auto& e : test::fs::directory_iterator(p)) names.push_back(e.path().filename().string());
    return names;
  };
  CHECK(names_in(dir.path) == std::vector<std::string>{"a"});
  CHECK(names_in(dir.path / "a") == std::vector<std::string>{"b"});
  CHECK(names_in(out).size() == 4);
}

TEST_CASE("a session still running at exit() is stopped and written") {
  test::temp_dir dir;
  auto t = test::trace_of_child(dir, [&] {
    auto* s = new npuprof::session(test::config_in(dir));  // never destroyed: exit() must still write
    s->start();
    std::thread([] {
      for (int i = 0; i < 100; ++i) NPUPROF_MARK(kernels, "from thread");
    }).join();
    NPUPROF_RANGE(kernels, "scoped range ended before exit");
    (void)npuprof::range_start<kernels>("open id range");  // left open on purpose
    // A thread still inside a scoped range when exit() runs.
    std::atomic<bool> inside{false};
    std::thread([&] {
      NPUPROF_RANGE(kernels, "scoped range open at exit");
      inside = true;
      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
    }).detach();
    while (!inside.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  CHECK(t.count("from thread") == 100);
  CHECK(t.named("open id range").at(0)["args"]["incomplete"] == true);
  CHECK(t.count_of("open_ranges") == 1);
  CHECK(t.count("scoped range ended before exit") == 1);
  CHECK(t.count("scoped range open at exit") == 0);
  CHECK(t.count_of("open_scoped_ranges") == 1);
}

TEST_CASE("scoped ranges with a registered message still open when the session stops are counted") {
  test::temp_dir dir;
  std::mutex m;
  std::condition_variable cv;
  bool opened = false, stopped = false;
  npuprof::session s{test::config_in(dir)};
  s.start();
  std::thread outliving([&] {
    { NPUPROF_RANGE(kernels, "closed before the stop"); }
    {
      NPUPROF_RANGE(kernels, "outer, open at the stop");
      NPUPROF_RANGE(kernels, "inner, open at the stop");
      std::unique_lock<std::mutex> lock(m);
      opened = true;
      cv.notify_all();
      cv.wait(lock, [&] { return stopped; });
    }
    NPUPROF_RANGE(kernels, "after the stop");
  });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return opened; });
  }
  const auto out = s.stop();
  {
    std::lock_guard<std::mutex> lock(m);
    stopped = true;
  }
  cv.notify_all();
  outliving.join();

  const auto t = test::load(out);
  CHECK(t.count("closed before the stop") == 1);
  CHECK(t.count("outer, open at the stop") == 0);
  CHECK(t.count("inner, open at the stop") == 0);
  CHECK(t.count_of("open_scoped_ranges") == 2);
  CHECK(t.count_of("open_ranges") == 0);

  // The thread ended them all: a later session starts from none open.
  npuprof::session again{test::config_in(dir)};
  again.start();
  CHECK(test::load(again.stop()).count_of("open_scoped_ranges") == 0);
}

TEST_CASE("trace id from a callback, user metadata, and the rank in names and metadata") {
  test::temp_dir dir;
  npuprof::config cfg = test::config_in(dir);
  cfg.trace_id_callback = [] { return std::string("job-7/request-42"); };
  {
    test::scoped_env rank("RANK", "3"), local("LOCAL_RANK", "1"), world("WORLD_SIZE", "8");
    cfg.apply_env();
  }
  npuprof::session s{cfg};
  s.add_metadata("model", "llama-7b");
  s.add_metadata("batch", 16);
  s.start();
  npuprof::mark("m");
  const auto path = s.stop();
  auto t = test::load(path);
  CHECK(s.trace_id() == "job-7/request-42");
  CHECK(t.meta["trace_id"] == "job-7/request-42");
  CHECK(t.meta["user"]["model"] == "llama-7b");
  CHECK(t.meta["user"]["batch"] == 16);
  CHECK(t.meta["rank"]["rank"] == 3);
  CHECK(t.meta["rank"]["local_rank"] == 1);
  CHECK(t.meta["rank"]["world_size"] == 8);
  CHECK(path.filename().string().find("_rank3_") != std::string::npos);

  npuprof::config bad = test::config_in(dir);
  bad.rank = 8;
  bad.world_size = 8;
  CHECK(error_of([&] { bad.validate(); }).find("key 'rank': must be below world_size (8), got 8") != std::string::npos);
  CHECK(error_of([] {
          npuprof::config::from_json(R"({"rank": "x"})", "r.json");
        }).find("r.json: key 'rank': expected an integer") != std::string::npos);
  npuprof::config generated = test::config_in(dir);
  npuprof::session g{generated};
  g.start();
  g.stop();
  CHECK(g.trace_id().size() == 32);
}

TEST_CASE("a full disk is a clear error naming the file; nothing half-written stays, and the data is kept") {
  // The file size limit stands in for a full disk: writes past it fail the
  // way they fail on a full file system. In a child, where the limit is its own.
  test::temp_dir dir, good;
  const std::string full = (dir.path / "small").string();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    test_in_forked_child = true;
    std::signal(SIGXFSZ, SIG_IGN);  // a failed write, not a killed process
    rlimit limit{};
    ::getrlimit(RLIMIT_FSIZE, &limit);
    const rlimit normal = limit;
    limit.rlim_cur = 16 * 1024;
    ::setrlimit(RLIMIT_FSIZE, &limit);
    auto cfg = test::config_in(dir);
    cfg.output_dir = full;
    npuprof::session s{cfg};
    s.start();
    for (int i = 0; i < 5000; ++i) npuprof::mark<kernels>("kept after a full disk");
    const std::string msg = error_of([&] { s.stop(); });
    ::setrlimit(RLIMIT_FSIZE, &normal);
    std::ofstream(good.path / "error.txt") << msg;
    try {
      s.write_to(good.path.string());
    } catch (...) {
      std::_Exit(3);
    }
    std::_Exit(s.running() ? 4 : 0);
  }
  REQUIRE(wait_for_child(pid, 60) == 0);
  std::ifstream in(good.path / "error.txt");
  const std::string msg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_MESSAGE(msg.find("npuprof: cannot write '" + full + "/") != std::string::npos, msg);
  CHECK_MESSAGE(msg.find("trace_view.json': " + std::string(std::strerror(EFBIG))) != std::string::npos, msg);
  CHECK(test::fs::is_empty(full));  // the half-written directory was removed
  const auto written = outputs_in(good);
  REQUIRE(written.size() == 1);
  const test::trace t = test::load(written[0]);
  CHECK(t.count("kept after a full disk") == 5000);
}

// stop() takes the published records, then writes the counts: a scoped range
// with a registered message that ends in between writes its one record too
// late to be taken. It must then be counted as open, never be neither.
TEST_CASE("a scoped range ending while stop() runs is in the trace or counted as open") {
  test::temp_dir dir;
  constexpr int threads = 2, per_thread = 200'000, rounds = 30;
  static std::deque<npuprof::registered_string<kernels>> names;
  if (names.empty()) {
    for (int i = 0; i < per_thread; ++i) names.emplace_back("r" + std::to_string(i));
  }
  auto now_ns = [] { return npuprof::steady_ns(); };
  // began[t][n]: when range n of thread t had begun (its constructor returned).
  std::vector<std::unique_ptr<std::atomic<std::int64_t>[]>> began;
  std::vector<std::atomic<std::uint32_t>> tids(threads);
  for (int t = 0; t < threads; ++t) began.emplace_back(new std::atomic<std::int64_t>[per_thread]());
  std::atomic<bool> go{true};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      tids[t] = npuprof::detail::os_thread_id();
      for (int n = 0; n < per_thread && go; ++n) {
        npuprof::scoped_range<kernels> r{names[n]};
        began[t][n] = now_ns();
        const std::int64_t end = now_ns() + 100'000;  // 100 us: many end while stop() runs
        while (now_ns() < end && go) {
        }
      }
    });
  }
  npuprof::session s{test::config_in(dir)};
  std::uint64_t lost = 0, counted_open = 0;
  for (int round = 0; round < rounds; ++round) {
    s.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const std::int64_t stop_called = now_ns();
    s.stop();
    const npuprof::trace_data& d = s.data();
    // Each thread has at most one range open at a time: the one after its
    // last recorded range, if it began before stop() was called.
    std::uint64_t missing = 0;
    for (int t = 0; t < threads; ++t) {
      int last = -1;
      for (const npuprof::trace_event& e : d.events) {
        if (e.tid == tids[t]) last = std::max(last, std::atoi(std::string(d.name_of(e)).c_str() + 1));
      }
      if (last >= 0 && last + 1 < per_thread) {
        const std::int64_t b = began[t][last + 1].load();
        if (b != 0 && b < stop_called) ++missing;
      }
    }
    counted_open += d.counts.open_scoped_ranges;
    if (missing > d.counts.open_scoped_ranges) lost += missing - d.counts.open_scoped_ranges;
  }
  go = false;
  for (std::thread& w : workers) w.join();
  CHECK(lost == 0);
  CHECK(counted_open > 0);  // the case happened: ranges were open at stop()
}

// A chunk source that stalls a thread's first handover of a full chunk, as a
// thread preempted there would stall: the chunk is off the thread's buffer
// and not yet in the queue the session drains.
class stalling_chunk_source final : public npuprof::detail::chunk_source {
 public:
  npuprof::detail::chunk_source* real = nullptr;
  std::atomic<bool> armed{false}, stalled{false};

  npuprof::detail::chunk* take_free() noexcept override { return real->take_free(); }
  npuprof::detail::chunk* take_for_new_thread() noexcept override { return real->take_for_new_thread(); }
  void hand_full(npuprof::detail::chunk* c) noexcept override {
    if (armed.exchange(false)) {
      stalled = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    real->hand_full(c);
  }
};

TEST_CASE("a thread handing a chunk over while stop() or a dump reads the buffers loses none of its records") {
  test::temp_dir dir;
  // Threads may call the source they read at any time: it lives as long as the process.
  static stalling_chunk_source stalling;
  static std::deque<npuprof::registered_string<kernels>> names;
  constexpr int per_thread = 1000;
  if (names.empty()) {
    for (int i = 0; i < per_thread; ++i) names.emplace_back("h" + std::to_string(i));
  }
  enum class when { full_chunk_then_stop, full_chunk_then_dump, thread_exit_then_stop };
  for (const when w : {when::full_chunk_then_stop, when::full_chunk_then_dump, when::thread_exit_then_stop}) {
    CAPTURE(static_cast<int>(w));
    const bool by_dump = w == when::full_chunk_then_dump;
    // A thread that exits hands its last chunk over, however little it holds.
    const int ranges = w == when::thread_exit_then_stop ? 10 : per_thread;
    npuprof::config cfg = test::config_in(dir);
    cfg.chunk_size_kb = 1;  // a few dozen ranges fill a chunk
    npuprof::session s{cfg};
    s.start();
    std::atomic<npuprof::detail::chunk_source*>& source = npuprof::detail::markers().chunks;
    stalling.real = source.load();
    stalling.stalled = false;
    stalling.armed = true;
    source.store(&stalling);
    std::atomic<int> ended{0};
    std::thread worker([&] {
      for (int i = 0; i < ranges; ++i) {
        { npuprof::scoped_range<kernels> r{names[i]}; }
        ended = i + 1;
      }
    });
    while (!stalling.stalled) std::this_thread::yield();
    const int ended_before = ended.load();  // these ranges' records are published
    const test::fs::path out = by_dump ? npuprof::dump("handover") : s.stop();
    worker.join();
    source.store(stalling.real);
    if (by_dump) s.stop();

    const test::trace t = test::load(out);
    REQUIRE(ended_before > 0);
    int missing = 0;
    for (int i = 0; i < ended_before; ++i) missing += t.count("h" + std::to_string(i)) == 1 ? 0 : 1;
    CHECK(missing == 0);
    CHECK(t.count_of("dropped_events") == 0);
  }
}

// A real file system short of room: a request for room ahead that fails part
// way must not keep what it got, or the trace's other files would not fit.
// Needs root and loop devices (mkfs.ext4, mount): skipped where they are not,
// and under ThreadSanitizer.
TEST_CASE("a trace that fits a nearly full file system is written whole") {
  test::temp_dir dir, other;
  const std::string image = (dir.path / "fs.img").string(), mnt = (dir.path / "mnt").string();
  test::fs::create_directory(mnt);
  const std::string setup = "truncate -s 12M '" + image + "' && mkfs.ext4 -q -F '" + image +
                            "' >/dev/null 2>&1 && mount -o loop '" + image + "' '" + mnt + "' 2>/dev/null";
  // Not under ThreadSanitizer: std::system() forks, and a fork taken while
  // earlier cases' runtime threads live can hang there.
  if (test::thread_sanitizer || ::geteuid() != 0 || std::system(setup.c_str()) != 0) {
    MESSAGE(
        "skipped: under ThreadSanitizer, or no small ext4 file system can be mounted here (needs root and loop "
        "devices)");
    return;
  }
  struct unmount {
    std::string at;
    ~unmount() { (void)std::system(("umount '" + at + "'").c_str()); }
  } guard{mnt};
  {
    std::ofstream filler(mnt + "/filler", std::ios::binary);
    const std::string block(1 << 16, '\0');
    for (int i = 0; i < 19; ++i) filler << block;  // 1.2 MB: about 8 MB stay free
  }
  static const npuprof::registered_string<kernels> name{"range"};
  auto cfg = test::config_in(dir);
  cfg.output_dir = mnt;
  for (int round = 0; round < 3; ++round) {
    npuprof::session s{cfg};
    s.start();
    for (int i = 0; i < 55'000; ++i) npuprof::scoped_range<kernels> r{name};  // an 8 MB trace
    std::filesystem::path out;
    const std::string msg = error_of([&] { out = s.stop(); });
    CHECK_MESSAGE(msg == "(no error)", msg);
    if (out.empty()) break;
    const test::trace t = test::load(out);
    CHECK(t.count("range", "X") == 55'000);
    test::fs::remove_all(out);
  }
}

TEST_CASE("fork() while threads record: the parent's trace is whole and the child can start its own session") {
  test::temp_dir dir, child_dir;
  npuprof::session s{test::config_in(dir)};
  s.start();
  std::atomic<bool> recording{true};
  std::atomic<long> made[2] = {{0}, {0}};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      const std::string prefix = "parent " + std::to_string(t) + " ";
      long n = 0;
      while (recording.load(std::memory_order_relaxed)) {
        npuprof::mark<kernels>(prefix + std::to_string(n++));
        if (n % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
      made[t] = n;
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  npuprof::mark<kernels>("before fork");
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Only this thread exists here. The parent's session, copied, records
    // nothing and cannot be stopped here; a session of the child's own can run.
    test_in_forked_child = true;
    npuprof::mark<kernels>("child, before its session");
    if (error_of([&] { s.stop(); }).find("not in this fork() child") == std::string::npos) std::_Exit(2);
    if (test::thread_sanitizer) std::_Exit(0);
    npuprof::session own{test::config_in(child_dir)};
    try {
      own.start();
      std::thread([] {
        for (int i = 0; i < 100; ++i) npuprof::mark<kernels>("child thread");
      }).join();
      npuprof::mark<kernels>("child main");
      own.stop();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      std::_Exit(3);
    }
    std::exit(0);  // the exit hook runs here, with no session of the child's running
  }
  const int child = wait_for_child(pid, 30);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  recording = false;
  for (auto& th : threads) th.join();
  npuprof::mark<kernels>("after fork");
  const test::trace t = test::load(s.stop());
  REQUIRE(child == 0);

  CHECK(t.count("before fork") == 1);
  CHECK(t.count("after fork") == 1);
  CHECK(t.count("child, before its session") == 0);
  CHECK(t.count("child main") == 0);
  CHECK(t.count_of("dropped_events") == 0);
  std::map<std::string, int> seen;
  for (const auto& e : t.events) {
    if (e["ph"] == "i") ++seen[e["name"].get<std::string>()];
  }
  for (int th = 0; th < 2; ++th) {
    REQUIRE(made[th] > 100);
    long once = 0;
    for (long i = 0; i < made[th]; ++i) once += seen["parent " + std::to_string(th) + " " + std::to_string(i)] == 1;
    CHECK_MESSAGE(once == made[th], "thread " << th << ": " << once << " of " << made[th] << " marks once");
  }

  if (test::thread_sanitizer) {
    MESSAGE("under ThreadSanitizer the child starts no session of its own (its runtime cannot start threads there)");
    return;
  }
  const auto own = outputs_in(child_dir);
  REQUIRE(own.size() == 1);
  CHECK(own[0].filename().string().find("_" + std::to_string(pid) + "_") != std::string::npos);
  const test::trace c = test::load(own[0]);
  CHECK(c.count("child main") == 1);
  CHECK(c.count("child thread") == 100);
  CHECK(c.count("child, before its session") == 0);
  CHECK(c.count("before fork") == 0);
  std::size_t parents = 0;
  for (const auto& e : c.events) parents += e.value("name", "").rfind("parent ", 0) == 0 ? 1 : 0;
  CHECK(parents == 0);
}

TEST_CASE("metadata with invalid UTF-8 is written, each bad byte replaced by U+FFFD") {
  test::temp_dir dir;
  npuprof::session s{test::config_in(dir)};
  s.start();
  s.add_metadata("origin", std::string("bad \xff byte"));
  const test::trace t = test::load(s.stop());
  CHECK(t.meta["user"]["origin"] == "bad \xEF\xBF\xBD byte");
}

TEST_CASE("an exception through scoped ranges ends them; one nobody catches still writes the trace") {
  test::temp_dir dir;
  const test::trace caught = test::record(test::config_in(dir), [] {
    try {
      NPUPROF_RANGE(kernels, "outer");
      NPUPROF_RANGE(kernels, "inner");
      throw std::runtime_error("kernel failed");
    } catch (const std::runtime_error&) {
      npuprof::mark<kernels>("caught");
    }
  });
  REQUIRE(caught.count("outer", "X") == 1);
  REQUIRE(caught.count("inner", "X") == 1);
  CHECK(test::check_nesting(caught) == 2);
  const auto caught_at = test::to_ns(caught.named("caught").at(0)["ts"]);
  const auto outer = caught.named("outer").at(0);
  CHECK(test::to_ns(outer["ts"]) + test::to_ns(outer["dur"]) <= caught_at + 1000);
  CHECK(caught.count_of("open_ranges") == 0);

  // Uncaught: std::terminate, which runs no exit handlers.
  test::temp_dir crash_dir;
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    test_in_forked_child = true;
    npuprof::session s{test::config_in(crash_dir)};
    s.start();
    std::signal(SIGABRT, SIG_DFL);  // the test framework's crash report is not wanted here
    npuprof::mark<kernels>("before the throw");
    // A copied message writes the begin at once, so the open range is reported.
    npuprof::scoped_range<kernels> open{std::string("never ends")};
    std::thread([] { throw std::runtime_error("nobody catches this"); }).join();
    std::_Exit(0);  // not reached
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);  // the handler before npuprof's still ran
  const auto written = outputs_in(crash_dir);
  REQUIRE(written.size() == 1);
  const test::trace t = test::load(written[0]);
  CHECK(t.count("before the throw") == 1);
  CHECK(t.named("never ends").at(0)["args"]["incomplete"] == true);
  CHECK(t.count_of("open_ranges") == 1);
  CHECK(t.meta["collection"]["reason"] == "terminate");
}

TEST_CASE("a dump whose error nobody catches ends the process with abort, never a hang") {
  test::temp_dir dir;
  const auto out = dir.path / "out";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    test_in_forked_child = true;
    auto cfg = test::config_in(dir);
    cfg.output_dir = out.string();
    npuprof::session s{cfg};
    s.start();
    npuprof::mark<kernels>("recorded");
    // The output directory becomes unwritable while the session runs.
    std::error_code ec;
    test::fs::remove_all(out, ec);
    std::ofstream(out) << "a file where the directory was";
    std::signal(SIGABRT, SIG_DFL);
    std::thread([] { npuprof::dump("watchdog"); }).join();  // throws out of the thread: std::terminate
    std::_Exit(0);                                          // not reached
  }
  CHECK(signal_of_child(pid, 60) == SIGABRT);
}

TEST_CASE("dumps from another thread racing hundreds of session restarts never touch a freed session") {
  test::temp_dir dir;
  std::atomic<bool> done{false};
  std::atomic<int> written{0}, refused{0};
  std::vector<test::fs::path> dumps;
  std::string other_error;
  std::thread watchdog([&] {
    while (!done.load()) {
      try {
        dumps.push_back(npuprof::dump("watchdog"));
        ++written;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // writing is not what is tried here
      } catch (const npuprof::error& e) {
        const std::string what = e.what();
        const bool no_session =
            what.find("no session is running") != std::string::npos || what.find("not running") != std::string::npos;
        if (!no_session) other_error = what;
        ++refused;
      }
    }
  });
  const int restarts = 300;
  for (int i = 0; i < restarts; ++i) {
    auto cfg = test::config_in(dir);
    cfg.output_dir = (dir.path / "sessions").string();
    auto s = std::make_unique<npuprof::session>(cfg);
    s->start();
    npuprof::mark<kernels>("round " + std::to_string(i));
    if (i % 3 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // room for dumps to succeed
    if (i % 2 == 0) s->stop();                                                  // else the destructor stops it
    s.reset();
  }
  done = true;
  watchdog.join();
  MESSAGE(written.load() << " dumps written, " << refused.load() << " refused");
  CHECK_MESSAGE(other_error.empty(), other_error);
  CHECK(written.load() > 0);
  CHECK(refused.load() > 0);
  // Every dump that returned a path wrote a complete trace.
  for (std::size_t i = 0; i < dumps.size(); i += std::max<std::size_t>(1, dumps.size() / 20)) {
    const test::trace t = test::load(dumps[i]);
    CHECK(t.meta["collection"]["reason"] == "watchdog");
  }
}

TEST_CASE("bursts far below the memory cap drop nothing") {
  test::temp_dir dir;
  SUBCASE("one thread, 100,000 ranges with distinct copied messages") {
    constexpr int n = 100'000;
    auto t = test::record(test::config_in(dir), [&] {
      for (int i = 0; i < n; ++i) npuprof::scoped_range<kernels> r{"request " + std::to_string(i)};
    });
    CHECK(t.count_of("dropped_events") == 0);
    std::size_t slices = 0;
    for (const auto& e : t.phase("X")) slices += e["name"].get<std::string>().rfind("request ", 0) == 0;
    CHECK(slices == n);
  }
  SUBCASE("1000 live threads, 200 ranges each") {
    constexpr int threads = 1000, each = 200;
    auto t = test::record(test::config_in(dir), [&] {
      std::mutex m;
      std::condition_variable cv;
      int waiting = 0;
      bool go = false;
      std::vector<std::thread> pool;
      for (int k = 0; k < threads; ++k) {
        pool.emplace_back([&] {
          {
            std::unique_lock<std::mutex> lock(m);
            ++waiting;
            cv.notify_all();
            cv.wait(lock, [&] { return go; });
          }
          for (int i = 0; i < each; ++i) npuprof::scoped_range<kernels> r{"r " + std::to_string(i)};
          std::unique_lock<std::mutex> lock(m);  // all stay alive until all are done
          if (--waiting == 0) cv.notify_all();
          cv.wait(lock, [&] { return waiting == 0; });
        });
      }
      {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return waiting == threads; });
        go = true;
      }
      cv.notify_all();
      for (auto& th : pool) th.join();
    });
    CHECK(t.count_of("dropped_events") == 0);
    CHECK(t.phase("X").size() == static_cast<std::size_t>(threads) * each);
  }
  SUBCASE("one thread, 100,000 ranges with 255-byte copied messages") {
    constexpr int n = 100'000;
    auto t = test::record(test::config_in(dir), [&] {
      std::string message(255, 'm');
      for (int i = 0; i < n; ++i) {
        char digits[17];
        std::snprintf(digits, sizeof digits, "%016d", i);  // distinct messages, no NUL inside
        std::memcpy(message.data(), digits, 16);
        npuprof::scoped_range<kernels> r{message};
      }
    });
    CHECK(t.count_of("dropped_events") == 0);
    CHECK(t.phase("X").size() == static_cast<std::size_t>(n));
  }
  SUBCASE("one thread, a range, a counter and a mark per step, 50,000 steps") {
    constexpr int n = 50'000;
    auto t = test::record(test::config_in(dir), [&] {
      for (int i = 0; i < n; ++i) {
        npuprof::scoped_range<kernels> r{"step " + std::to_string(i)};
        npuprof::counter<kernels>("queue_depth", i);
        npuprof::mark<kernels>("dispatched " + std::to_string(i));
      }
    });
    CHECK(t.count_of("dropped_events") == 0);
    CHECK(t.phase("X").size() == static_cast<std::size_t>(n));
    CHECK(t.phase("i").size() == static_cast<std::size_t>(n));
    CHECK(t.phase("C").size() == static_cast<std::size_t>(n));
  }
  SUBCASE("64 threads, 3000 ranges each, all at once") {
    constexpr int threads = 64, each = 3000;
    auto t = test::record(test::config_in(dir), [&] {
      std::atomic<bool> go{false};
      std::vector<std::thread> pool;
      for (int k = 0; k < threads; ++k) {
        pool.emplace_back([&] {
          while (!go.load()) std::this_thread::yield();
          for (int i = 0; i < each; ++i) npuprof::scoped_range<kernels> r{"r " + std::to_string(i)};
        });
      }
      go = true;
      for (auto& th : pool) th.join();
    });
    CHECK(t.count_of("dropped_events") == 0);
    CHECK(t.phase("X").size() == static_cast<std::size_t>(threads) * each);
  }
  SUBCASE("a 4 MiB cap still drops, and counts every event it dropped") {
    constexpr int n = 100'000;
    auto cfg = test::config_in(dir);
    cfg.buffer_size_kb = 4096;
    cfg.flush_interval_ms = 60000;
    auto t = test::record(cfg, [&] {
      for (int i = 0; i < n; ++i) npuprof::scoped_range<kernels> r{"request " + std::to_string(i)};
    });
    const std::uint64_t dropped = t.count_of("dropped_events");
    CHECK(dropped > 0);
    // A dropped begin records nothing more; every recorded begin kept its end.
    CHECK(t.phase("X").size() + dropped == n);
    CHECK(t.count_of("dropped_range_ends") == 0);
    CHECK(t.count_of("open_ranges") == 0);
  }
}

TEST_CASE("the memory cap is address space until written: a 1 GiB cap costs the ready reserve, and a burst takes it") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.buffer_size_kb = 1u << 20;
  const std::size_t before = test::resident_bytes();
  npuprof::session s{cfg};
  s.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::size_t started = test::resident_bytes();
  MESSAGE("resident memory at start: +" << (static_cast<double>(started) - static_cast<double>(before)) / (1 << 20)
                                        << " MiB");
  if (!test::sanitized) CHECK(started < before + (32u << 20));  // the 4 MiB reserve and the containers' nodes
  constexpr int n = 100'000;
  for (int i = 0; i < n; ++i) npuprof::scoped_range<kernels> r{"request " + std::to_string(i)};
  const test::trace t = test::load(s.stop());
  CHECK(t.count_of("dropped_events") == 0);
  CHECK(t.phase("X").size() == static_cast<std::size_t>(n));
}

TEST_CASE("a range whose begin was recorded keeps its end when the buffer is full") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.chunk_size_kb = 16;
  cfg.buffer_size_kb = 64;  // four chunks, all in use below
  cfg.flush_interval_ms = 60000;
  // `depth` nested ranges open while the buffer fills up, then all end.
  auto nest_through_full_buffer = [](int depth) {
    std::vector<std::unique_ptr<npuprof::scoped_range<kernels>>> open;
    for (int i = 0; i < depth; ++i)
      open.push_back(std::make_unique<npuprof::scoped_range<kernels>>("level " + std::to_string(i)));
    for (int i = 0; i < 100'000; ++i) npuprof::mark<kernels>("filler " + std::to_string(i));
    while (!open.empty()) open.pop_back();  // innermost first
  };
  SUBCASE("nested ranges as deep as the room kept for ends") {
    constexpr int depth = 20;
    auto t = test::record(cfg, [&] { nest_through_full_buffer(depth); });
    CHECK(t.count_of("dropped_events") > 0);
    CHECK(t.count_of("dropped_range_ends") == 0);
    for (int i = 0; i < depth; ++i) {
      const auto s = t.named("level " + std::to_string(i), "X");
      REQUIRE(s.size() == 1);
      CHECK_FALSE(s[0]["args"].contains("incomplete"));
    }
    CHECK(test::check_nesting(t) == depth);
  }
  SUBCASE("deeper than that: lost ends are counted, and no slice is drawn as if it lasted") {
    constexpr int depth = 200;
    auto t = test::record(cfg, [&] {
      nest_through_full_buffer(depth);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // an open range would last past this
    });
    const std::uint64_t lost = t.count_of("dropped_range_ends");
    CHECK(lost > 0);
    CHECK(t.count_of("ranges_without_end") == lost);
    CHECK(t.count_of("open_ranges") == 0);
    std::size_t without_end = 0;
    for (const auto& s : t.phase("X")) {
      if (!s["args"].contains("incomplete")) continue;
      ++without_end;
      CHECK(test::to_ns(s["dur"]) == 0);
    }
    CHECK(without_end == lost);
  }
}

TEST_CASE("clear() while threads record: nothing from before it, no hole after it") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.chunk_size_kb = 4;      // chunks change hands often
  cfg.buffer_size_kb = 1024;  // and the cap is reached: drops must be counted
  npuprof::session s{cfg};
  s.start();
  test::sequence_markers markers(3);
  for (int i = 0; i < 40; ++i) {
    npuprof::mark("before clear");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    s.clear();
    npuprof::mark("after clear");
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    const test::trace t = test::load(s.dump("check"));
    CHECK(t.count("before clear") == 0);
    CHECK(t.count("after clear") == 1);
    CHECK_MESSAGE(test::sequence_markers::gaps(t).empty(), "dump " << i << ": " << test::sequence_markers::gaps(t));
    test::fs::remove_all(t.dir);
  }
  s.stop();
}

#ifndef NPUPROF_TEST_SANITIZED
// Heap memory in use, and its peak, counted by replacing operator new and
// delete in this test program: exact, where resident memory also moves with
// the kernel's own work (huge pages collapsed in the background).
namespace heap {
std::atomic<long long> in_use{0}, peak{0};
void* take(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  const long long now = in_use += static_cast<long long>(malloc_usable_size(p));
  for (long long seen = peak.load(); now > seen && !peak.compare_exchange_weak(seen, now);) {
  }
  return p;
}
void give(void* p) noexcept {
  if (p == nullptr) return;
  in_use -= static_cast<long long>(malloc_usable_size(p));
  std::free(p);
}
}  // namespace heap

void* operator new(std::size_t n) { return heap::take(n); }
void* operator new[](std::size_t n) { return heap::take(n); }
void operator delete(void* p) noexcept { heap::give(p); }
void operator delete[](void* p) noexcept { heap::give(p); }
void operator delete(void* p, std::size_t) noexcept { heap::give(p); }
void operator delete[](void* p, std::size_t) noexcept { heap::give(p); }

TEST_CASE("writing a trace takes memory for a window of events, not for the whole trace") {
  static const npuprof::registered_string<> name{"many"}, inner{"inner"};
  auto extra_heap = [&](bool pairs) {
    test::temp_dir dir;
    npuprof::session s{test::config_in(dir)};
    s.start();
    for (int i = 0; i < 1'000'000; ++i) {
      npuprof::scoped_range<> r{name};
      if (pairs) npuprof::scoped_range<> in{inner};  // each outer range is written after the one it holds
    }
    const long long before = heap::in_use.load();
    heap::peak = before;
    const auto written = s.stop();
    const long long extra = heap::peak.load() - before;
    const test::json meta =
        test::read_json(written / "profiler_metadata.json");  // the trace is too large to parse here
    const auto buffer_bytes = meta["counts"]["buffer_bytes"].get<std::uint64_t>();
    REQUIRE(meta["session"]["events"] == (pairs ? 2'000'000u : 1'000'000u));
    REQUIRE(test::fs::file_size(written / "trace_view.json") > 100'000'000u);
    INFO("peak extra heap " << extra / 1e6 << " MB for " << buffer_bytes / 1e6 << " MB of records");
    return static_cast<double>(extra) / static_cast<double>(buffer_bytes);
  };
  CHECK(extra_heap(false) <= 0.5);
  CHECK(extra_heap(true) <= 0.5);
}

TEST_CASE("write_to() after a restart writes the earlier records with their own trace id and metadata") {
  test::temp_dir dir;
  npuprof::session s{test::config_in(dir)};
  s.add_metadata("run", 1);
  s.start();
  for (int i = 0; i < 10; ++i) npuprof::mark("first run");
  const test::trace first = test::load(s.stop());
  s.add_metadata("run", 2);
  s.start();
  npuprof::mark("second run");
  test::temp_dir elsewhere;
  const test::trace again = test::load(s.write_to(elsewhere.path.string()));
  const test::trace second = test::load(s.stop());
  CHECK(again.count("first run", "i") == 10);
  CHECK(again.meta["trace_id"] == first.meta["trace_id"]);
  CHECK(again.meta["user"]["run"] == 1);
  CHECK(second.meta["user"]["run"] == 2);
}
#endif
