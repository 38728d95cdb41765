// export_type "db": the SQLite database, read back with SQLite and checked
// against the JSON trace of the same recording.
#include <npuprof/database.hpp>

#include "support.hpp"

#include <sqlite3.h>
#include <sys/resource.h>

#include <csignal>
#include <fstream>
#include <sstream>
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <thread>

#include "simulated_acl.h"

namespace {

using test::json;

struct serving {
  static constexpr const char* name = "serving";
};

constexpr std::uint64_t device_pid = 0x40000000;  // device 0

/// A database opened read-only; rows come back as text (NULL as "NULL").
class db_reader {
 public:
  explicit db_reader(const test::fs::path& path) {
    REQUIRE_MESSAGE(test::fs::exists(path), "no database at " << path);
    REQUIRE(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  }
  ~db_reader() { sqlite3_close(db_); }
  db_reader(const db_reader&) = delete;
  db_reader& operator=(const db_reader&) = delete;

  std::vector<std::vector<std::string>> rows(const std::string& sql) const {
    sqlite3_stmt* s = nullptr;
    REQUIRE_MESSAGE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK, sqlite3_errmsg(db_)
                                                                                            << ": " << sql);
    std::vector<std::vector<std::string>> out;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        const auto* text = sqlite3_column_text(s, i);
        row.push_back(text != nullptr ? reinterpret_cast<const char*>(text) : "NULL");
      }
      out.push_back(std::move(row));
    }
    CHECK(rc == SQLITE_DONE);
    sqlite3_finalize(s);
    return out;
  }
  std::int64_t number(const std::string& sql) const {
    const auto r = rows(sql);
    REQUIRE(r.size() == 1);
    return std::stoll(r[0][0]);
  }
  std::vector<std::string> columns(const std::string& table) const {
    std::vector<std::string> names;
    for (const auto& r : rows("PRAGMA table_info(" + table + ")")) names.push_back(r[1]);
    return names;
  }

 private:
  sqlite3* db_ = nullptr;
};

test::fs::path database_in(const test::fs::path& out, const char* file = "ascend_pytorch_profiler.db") {
  return out / "ASCEND_PROFILER_OUTPUT" / file;
}

std::uint32_t low_tid(const std::string& global_tid) {
  return static_cast<std::uint32_t>(std::stoull(global_tid) & 0xffffffffu);
}

}  // namespace

TEST_CASE("the database holds the JSON trace's events, names, threads and durations, in msprof's layout") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.export_type = {"text", "db"};
  cfg.backend = "acl";
  cfg.acl_library = NPUPROF_TEST_SIMULATED_ACL;
  aclrtStream stream = nullptr;
  REQUIRE(aclrtCreateStream(&stream) == ACL_SUCCESS);
  static const npuprof::registered_string<serving> request{"request"}, prefill{"prefill"}, decode{"decode"};
  npuprof::session s{cfg};
  const std::int64_t wall_before = npuprof::wall_ns();
  s.start();
  npuprof::name_thread("main loop");
  npuprof::range_id handoff = 0;
  std::uint32_t worker_tid = 0;
  std::thread worker([&] {
    npuprof::name_thread("worker \"one\"");
    worker_tid = npuprof::detail::os_thread_id();
    for (int i = 0; i < 50; ++i) {
      npuprof::scoped_range<serving> r{request};
      { npuprof::scoped_range<serving> p{prefill}; }
      for (int k = 0; k < 3; ++k) npuprof::scoped_range<serving> d{decode};
      npuprof::mark<serving>(std::string("token ") + std::to_string(i));
    }
    handoff = npuprof::range_start<serving>("handed over");
  });
  worker.join();
  npuprof::range_end<serving>(handoff);
  for (int i = 0; i < 5; ++i) {
    npuprof::scoped_range<serving> r{"on device", stream};
    npuprof_sim_launch_kernel(stream, 2000);
  }
  npuprof::mark<serving>("device mark", stream);
  npuprof::counter<serving>("queue depth", 7);
  npuprof::counter<serving>("load", 0.25);
  { npuprof::scoped_range<> r{"=default domain"}; }
  const auto t = test::load(s.stop());
  const std::int64_t wall_after = npuprof::wall_ns();

  const auto path = database_in(t.dir);
  CHECK_FALSE(test::fs::exists(path.string() + "-journal"));
  db_reader db(path);

  // msprof's column lists, in its order, and its enum rows, as
  // tests/data/msprof_db_schema.json gives them (with where they are from).
  using names = std::vector<std::string>;
  const json schema = test::read_json(NPUPROF_TEST_SCHEMA);
  REQUIRE(schema["tables"].size() >= 10);
  for (const auto& table : schema["tables"].items()) {
    CHECK_MESSAGE(db.columns(table.key()) == table.value().get<names>(), table.key());
  }
  std::vector<names> enum_rows;
  for (const json& row : schema["enums"]["ENUM_MSTX_EVENT_TYPE"]) {
    enum_rows.push_back({std::to_string(row[0].get<int>()), row[1].get<std::string>()});
  }
  CHECK(db.rows("SELECT id, name FROM ENUM_MSTX_EVENT_TYPE ORDER BY id") == enum_rows);

  // Each text once in STRING_IDS.
  CHECK(db.number("SELECT COUNT(*) - COUNT(DISTINCT value) FROM STRING_IDS") == 0);

  // Host slices and marks, by (thread, domain, name, duration), as in the JSON.
  std::multiset<std::tuple<std::uint32_t, std::string, std::string, std::int64_t>> json_slices, db_slices;
  std::multiset<std::tuple<std::uint32_t, std::string, std::string>> json_marks, db_marks;
  for (const json& e : t.events) {
    if (e["pid"] == device_pid) continue;
    if (e["ph"] == "X" && e["name"] != "handed over") {
      json_slices.emplace(e["tid"].get<std::uint32_t>(), e["args"]["domain"], e["name"], test::to_ns(e["dur"]));
    }
    if (e["ph"] == "i") json_marks.emplace(e["tid"].get<std::uint32_t>(), e["args"]["domain"], e["name"]);
  }
  const std::string joined =
      "SELECT m.globalTid, d.value, s.value, m.endNs - m.startNs, m.endGlobalTid, m.startNs, m.eventType "
      "FROM MSTX_EVENTS m JOIN STRING_IDS s ON s.id = m.message JOIN STRING_IDS d ON d.id = m.domainId ";
  for (const auto& r : db.rows(joined + "WHERE m.eventType = 2 AND s.value != 'handed over'")) {
    db_slices.emplace(low_tid(r[0]), r[1], r[2], std::stoll(r[3]));
  }
  for (const auto& r : db.rows(joined + "WHERE m.eventType = 3")) {  // marker_ex: msprof's type of mstx marks
    CHECK(r[3] == "0");
    db_marks.emplace(low_tid(r[0]), r[1], r[2]);
  }
  CHECK(json_slices.size() == 50 * 5 + 5 + 1);
  CHECK(db_slices == json_slices);
  CHECK(json_marks.size() == 51);
  CHECK(db_marks == json_marks);
  CHECK(db.number("SELECT COUNT(*) FROM MSTX_EVENTS WHERE eventType NOT IN (2, 3)") == 0);

  // Every mstx event has its own connection id, from msprof's first one on;
  // device events share theirs. Each mark is also a PYTORCH_API call linked
  // to it through CONNECTION_IDS, as torch_npu records mstx calls.
  CHECK(db.number("SELECT COUNT(DISTINCT connectionId) FROM MSTX_EVENTS") ==
        db.number("SELECT COUNT(*) FROM MSTX_EVENTS"));
  CHECK(db.number("SELECT MIN(connectionId) FROM MSTX_EVENTS") == 4000000001);
  const auto api = db.rows(
      "SELECT CAST(a.startNs AS INTEGER) = m.startNs, a.globalTid = m.globalTid, a.name = m.message, a.type "
      "FROM PYTORCH_API a JOIN CONNECTION_IDS c ON c.id = a.connectionId JOIN MSTX_EVENTS m ON m.connectionId = "
      "c.connectionId");
  CHECK(api.size() == 51);
  for (const auto& r : api) CHECK(r == names{"1", "1", "1", "50004"});
  CHECK(db.number("SELECT COUNT(*) FROM PYTORCH_API") == 51);

  // msprof's globalTid: the process id above the thread id.
  const auto pid = static_cast<std::uint64_t>(::getpid());
  CHECK(db.number("SELECT COUNT(*) FROM MSTX_EVENTS WHERE (globalTid >> 32) != " + std::to_string(pid)) == 0);

  // The range ended on another thread names both.
  const auto handed = db.rows(joined + "WHERE s.value = 'handed over'");
  REQUIRE(handed.size() == 1);
  CHECK(low_tid(handed[0][0]) == worker_tid);
  CHECK(low_tid(handed[0][4]) == static_cast<std::uint32_t>(::getpid()));

  // Ranges of one thread nest by startNs/endNs.
  for (const auto& r : db.rows("SELECT DISTINCT globalTid FROM MSTX_EVENTS")) {
    std::vector<std::pair<std::int64_t, std::int64_t>> open;
    for (const auto& e : db.rows("SELECT startNs, endNs FROM MSTX_EVENTS WHERE eventType = 2 AND globalTid = " + r[0] +
                                 " AND globalTid = endGlobalTid ORDER BY startNs, endNs DESC")) {
      const std::int64_t b = std::stoll(e[0]), end = std::stoll(e[1]);
      while (!open.empty() && open.back().second <= b) open.pop_back();
      if (!open.empty()) CHECK_MESSAGE(end <= open.back().second, "a slice outlasts its parent on " << r[0]);
      open.emplace_back(b, end);
    }
  }

  // The same times as the JSON's, within its microsecond, once the clocks
  // are lined up through the metadata.
  const std::int64_t steady_to_wall =
      t.meta["clock"]["wall_start_ns"].get<std::int64_t>() - t.meta["clock"]["steady_start_ns"].get<std::int64_t>();
  std::map<std::pair<std::uint32_t, std::string>, std::vector<std::int64_t>> json_starts, db_starts;
  for (const json& e : t.events) {
    if (e["pid"] != device_pid && (e["ph"] == "X" || e["ph"] == "i")) {
      json_starts[{e["tid"].get<std::uint32_t>(), e["name"].get<std::string>()}].push_back(test::to_ns(e["ts"]) +
                                                                                           steady_to_wall);
    }
  }
  for (const auto& r : db.rows(joined)) db_starts[{low_tid(r[0]), r[2]}].push_back(std::stoll(r[5]));
  for (auto* starts : {&json_starts, &db_starts}) {  // on a track of its own in the JSON: checked above
    for (auto it = starts->begin(); it != starts->end();) {
      it = it->first.second == "handed over" ? starts->erase(it) : std::next(it);
    }
  }
  REQUIRE(json_starts.size() == db_starts.size());
  std::int64_t worst = 0;
  for (auto& entry : json_starts) {
    std::vector<std::int64_t>& a = entry.second;
    std::vector<std::int64_t>& b = db_starts[entry.first];
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  CHECK(worst < 1000);

  // Epoch nanoseconds, inside the session's time.
  const auto span = db.rows("SELECT startTimeNs, endTimeNs FROM SESSION_TIME_INFO");
  REQUIRE(span.size() == 1);
  const std::int64_t start = std::stoll(span[0][0]), end = std::stoll(span[0][1]);
  CHECK(start >= wall_before - 1'000'000);
  CHECK(end <= wall_after + 1'000'000);
  CHECK(db.number("SELECT MIN(startNs) FROM MSTX_EVENTS") >= start);
  CHECK(db.number("SELECT MAX(endNs) FROM MSTX_EVENTS") <= end);

  // The device part of stream-tied markers: one TASK row each, linked to
  // its host row by connectionId.
  const auto device_json =
      t.where([](const json& e) { return e["pid"] == device_pid && (e["ph"] == "X" || e["ph"] == "i"); });
  CHECK(device_json.size() == 6);
  CHECK(db.number("SELECT COUNT(*) FROM TASK") == static_cast<std::int64_t>(device_json.size()));
  const auto linked = db.rows(
      "SELECT s.value, t.startNs >= m.startNs, t.endNs - t.startNs, t.streamId, t.deviceId FROM TASK t "
      "JOIN MSTX_EVENTS m ON m.connectionId = t.connectionId JOIN STRING_IDS s ON s.id = m.message");
  REQUIRE(linked.size() == device_json.size());
  std::multiset<std::string> linked_names;
  for (const auto& r : linked) {
    linked_names.insert(r[0]);
    CHECK(r[1] == "1");
    CHECK(r[3] == "0");
    CHECK(r[4] == "0");
  }
  CHECK(linked_names.count("on device") == 5);
  CHECK(linked_names.count("device mark") == 1);
  CHECK(db.number("SELECT COUNT(DISTINCT connectionId) FROM TASK") == 6);
  CHECK(db.number("SELECT COUNT(*) FROM MSTX_EVENTS m JOIN TASK t ON t.connectionId = m.connectionId") == 6);

  // Counters, threads, metadata.
  CHECK(db.number("SELECT COUNT(*) FROM NPUPROF_COUNTERS") == static_cast<std::int64_t>(t.phase("C").size()));
  CHECK(db.rows("SELECT c.value FROM NPUPROF_COUNTERS c JOIN STRING_IDS s ON s.id = c.name WHERE s.value = 'load'") ==
        std::vector<names>{{"0.25"}});
  std::map<std::uint32_t, std::string> json_threads, db_threads;
  for (const json& e : t.events) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] != device_pid)
      json_threads[e["tid"].get<std::uint32_t>()] = e["args"]["name"];
  }
  for (const auto& r : db.rows("SELECT t.tid, s.value FROM NPUPROF_THREADS t JOIN STRING_IDS s ON s.id = t.name")) {
    db_threads[static_cast<std::uint32_t>(std::stoul(r[0]))] = r[1];
  }
  CHECK(db_threads.at(worker_tid) == "worker \"one\"");
  for (const auto& entry : db_threads) CHECK(json_threads.at(entry.first) == entry.second);
  // META_DATA as torch_npu fills it: msprof's schema version, then each
  // metadata entry as JSON.
  CHECK(db.rows("SELECT value FROM META_DATA WHERE name = 'trace_id'") ==
        std::vector<names>{{t.meta["trace_id"].dump()}});
  CHECK(db.rows("SELECT value FROM META_DATA WHERE name LIKE 'SCHEMA_VERSION%' ORDER BY name") ==
        std::vector<names>{{"1.2.0"}, {"1"}, {"0"}, {"2"}});  // full, major, micro, minor
  // The device, as the (simulated) runtime names it.
  CHECK(db.rows("SELECT id, name FROM NPU_INFO") == std::vector<names>{{"0", "simulated NPU (npuprof)"}});
  const auto counts = json::parse(db.rows("SELECT value FROM META_DATA WHERE name = 'counts'").at(0).at(0));
  CHECK(counts["dropped_events"] == t.meta["counts"]["dropped_events"]);
  CHECK(db.rows("SELECT hostName FROM HOST_INFO") == std::vector<names>{{t.meta["hostname"].get<std::string>()}});
  CHECK(db.rows("SELECT rankId, deviceId FROM RANK_DEVICE_MAP") == std::vector<names>{{"-1", "0"}});
  aclrtDestroyStream(stream);
}

TEST_CASE("the database alone, named for the rank, from stop() and from dump()") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.export_type = {"db"};
  cfg.rank = 3;
  cfg.world_size = 4;
  cfg.flight.enabled = true;
  npuprof::session s{cfg};
  s.start();
  for (int i = 0; i < 100; ++i) npuprof::scoped_range<serving> r{"step"};
  const auto dumped = npuprof::dump("test");
  for (int i = 0; i < 10; ++i) npuprof::scoped_range<serving> r{"later"};
  const auto stopped = s.stop();
  for (const auto& out : {dumped, stopped}) {
    CHECK_FALSE(test::fs::exists(out / "trace_view.json"));
    db_reader db(database_in(out, "ascend_pytorch_profiler_3.db"));
    CHECK(
        db.number("SELECT COUNT(*) FROM MSTX_EVENTS m JOIN STRING_IDS s ON s.id = m.message WHERE s.value = 'step'") ==
        100);
    CHECK(db.rows("SELECT rankId FROM RANK_DEVICE_MAP") == std::vector<std::vector<std::string>>{{"3"}});
  }
}

TEST_CASE("each schedule cycle writes its own database") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.export_type = {"text", "db"};
  cfg.schedule = npuprof::schedule{/*wait*/ 1, /*active*/ 2, /*warmup*/ 0, /*repeat*/ 2};
  std::vector<test::fs::path> written;
  cfg.on_trace_ready = [&](const test::fs::path& p) { written.push_back(p); };
  npuprof::session s{cfg};
  s.start();
  for (int step = 0; step < 6; ++step) {
    npuprof::scoped_range<serving> r{std::string("step ") + std::to_string(step)};
    s.step();
  }
  s.stop();
  REQUIRE(written.size() == 2);
  const std::vector<std::vector<std::string>> first{{"step 1"}, {"step 2"}}, second{{"step 4"}, {"step 5"}};
  const std::string names =
      "SELECT s.value FROM MSTX_EVENTS m JOIN STRING_IDS s ON s.id = m.message ORDER BY m.startNs";
  CHECK(db_reader(database_in(written[0])).rows(names) == first);
  CHECK(db_reader(database_in(written[1])).rows(names) == second);
}

TEST_CASE("a database that cannot be written is an error naming it, and leaves no output directory") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.export_type = {"db"};
  npuprof::session s{cfg};
  s.start();
  for (int i = 0; i < 200'000; ++i) npuprof::scoped_range<serving> r{std::string("copied ") + std::to_string(i)};
  // Files may grow to 64 KiB: the database does not fit.
  rlimit before{};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &before) == 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = before;
  small.rlim_cur = 64 * 1024;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  std::string what;
  try {
    s.stop();
  } catch (const npuprof::error& e) {
    what = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &before);
  std::signal(SIGXFSZ, old_handler);
  CHECK_MESSAGE(what.find("ascend_pytorch_profiler.db") != std::string::npos, what);
  CHECK(test::fs::is_empty(dir.path));
}

TEST_CASE("the database reference's example queries run on a database and find what was recorded") {
  const char* docs = std::getenv("NPUPROF_TEST_DOCS");
  if (docs == nullptr) {
    MESSAGE("NPUPROF_TEST_DOCS is not set: skipped");
    return;
  }
  std::ifstream in(std::string(docs) + "/output.md");
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  const auto from = all.find("```sql\n");
  REQUIRE(from != std::string::npos);
  const auto to = all.find("```", from + 7);
  std::vector<std::string> queries;
  std::stringstream block(all.substr(from + 7, to - from - 7));
  std::string query, line;
  while (std::getline(block, line)) {
    if (line.rfind("--", 0) == 0) continue;
    query += line + "\n";
    if (!line.empty() && line.back() == ';') queries.push_back(std::exchange(query, std::string()));
  }
  REQUIRE(queries.size() == 3);

  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.export_type = {"db"};
  cfg.backend = "acl";
  cfg.acl_library = NPUPROF_TEST_SIMULATED_ACL;
  aclrtStream stream = nullptr;
  REQUIRE(aclrtCreateStream(&stream) == ACL_SUCCESS);
  npuprof::session s{cfg};
  s.start();
  npuprof::name_thread("scheduler");
  for (int i = 0; i < 3; ++i) {
    npuprof::scoped_range<serving> r{"kernel", stream};
    npuprof_sim_launch_kernel(stream, 1000);
  }
  const auto out = s.stop();
  aclrtDestroyStream(stream);
  db_reader db(database_in(out));
  const auto slowest = db.rows(queries[0]);
  REQUIRE(slowest.size() == 1);
  CHECK(slowest[0][0] == "kernel");
  CHECK(slowest[0][1] == "3");
  const auto by_thread = db.rows(queries[1]);
  REQUIRE(by_thread.size() == 3);
  CHECK(by_thread[0][1] == "scheduler");
  const auto device = db.rows(queries[2]);
  REQUIRE(device.size() == 3);
  for (const auto& r : device) CHECK(std::stoll(r[2]) > 0);
}

TEST_CASE("invalid UTF-8 in messages, names and metadata is stored as the JSON has it, and loses nothing") {
  test::temp_dir dir;
  auto cfg = test::config_in(dir);
  cfg.export_type = {"text", "db"};
  cfg.trace_id_callback = [] { return std::string("trace \xe2\x82"); };  // a sequence cut short
  npuprof::session s{cfg};
  s.add_metadata("note", std::string("bad\xff"));
  s.add_metadata("nested", {{"k", std::string("v\xfe")}});
  s.start();
  std::thread([] {
    npuprof::name_thread(std::string("thread \xc3"));
    npuprof::mark<serving>(std::string("mark \xff end"));
    npuprof::counter<serving>("infinite", std::numeric_limits<double>::infinity());
  }).join();
  const auto t = test::load(s.stop());
  db_reader db(database_in(t.dir));
  const auto marks = t.phase("i");
  REQUIRE(marks.size() == 1);
  CHECK(db.rows("SELECT s.value FROM MSTX_EVENTS m JOIN STRING_IDS s ON s.id = m.message") ==
        std::vector<std::vector<std::string>>{{marks[0]["name"].get<std::string>()}});
  CHECK(marks[0]["name"] == "mark \xEF\xBF\xBD end");
  CHECK(db.number("SELECT COUNT(*) FROM STRING_IDS WHERE value = 'thread \xEF\xBF\xBD'") == 1);
  const auto user = json::parse(db.rows("SELECT value FROM META_DATA WHERE name = 'user'").at(0).at(0));
  CHECK(user == t.meta["user"]);
  CHECK(user["note"] == "bad\xEF\xBF\xBD");
  CHECK(db.rows("SELECT value FROM META_DATA WHERE name = 'trace_id'") ==
        std::vector<std::vector<std::string>>{{t.meta["trace_id"].dump()}});
  // The counts are profiler_metadata.json's, but for the JSON's tracks.
  json counts = t.meta["counts"];
  counts.erase("overlapping_ranges");
  CHECK(json::parse(db.rows("SELECT value FROM META_DATA WHERE name = 'counts'").at(0).at(0)) == counts);
  // A value the JSON writes as null is NULL.
  CHECK(t.phase("C").at(0)["args"]["infinite"].is_null());
  CHECK(db.rows("SELECT value IS NULL FROM NPUPROF_COUNTERS") == std::vector<std::vector<std::string>>{{"1"}});
}

TEST_CASE(
    "the database goes into the directory npuprof made, even if a symlink takes its place, and a file swapped "
    "for a symlink is an error") {
  namespace d = npuprof::detail;
  test::temp_dir dir;
  const test::fs::path victim = dir.path / "victim";
  test::fs::create_directory(victim);
  d::output_directory out = d::make_output_dir(dir.path.string(), "w", 1, npuprof::wall_ns());
  d::output_directory sub = out.subdirectory("ASCEND_PROFILER_OUTPUT");
  const d::unique_fd file = sub.create("x.db");
  // Another process of the same user moves the directory away and puts a
  // symlink to its own in its place.
  const test::fs::path moved = out.path() / "moved";
  test::fs::rename(sub.path(), moved);
  test::fs::create_directory_symlink(victim, sub.path());
  {
    d::sqlite_file db(d::through_descriptor(sub, "x.db"), sub.path_of("x.db"));
    db.exec(d::database_schema);
    db.close();
  }
  CHECK_NOTHROW(d::check_written(sub, "x.db", file));
  CHECK(test::fs::is_empty(victim));
  CHECK(test::fs::file_size(moved / "x.db") > 0);
  // The file itself swapped for a symlink is found out.
  test::fs::remove(moved / "x.db");
  test::fs::create_symlink(victim / "y.db", moved / "x.db");
  std::string what;
  try {
    d::check_written(sub, "x.db", file);
  } catch (const npuprof::error& e) {
    what = e.what();
  }
  CHECK(what.find("the file was replaced while it was written") != std::string::npos);
}
