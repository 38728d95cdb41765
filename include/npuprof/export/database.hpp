// export_type "db": one SQLite database per output directory, laid out as
// msprof's (ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler[_{rank}].db), so
// that MindStudio Insight and SQL users read it as they read torch_npu's.
// Records are decoded a window at a time, as for the JSON trace, and
// inserted with prepared statements in one transaction. Times are
// nanoseconds since the Unix epoch.
#pragma once

#include "../marker/abi.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../engine/collected.hpp"
#include "../error.hpp"
#include "file.hpp"
#include "json_escape.hpp"
#include "metadata.hpp"
#include "trace_files.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// msprof's value for "none" in its integer id columns.
inline constexpr std::int64_t db_none = 4294967295;  // UINT32_MAX

/// The first connection id of mstx events: msprof numbers every mstx event
/// (host-only ones too) from here, and a device event shares its host
/// event's id in TASK.
inline constexpr std::int64_t first_mstx_connection = 4000000001;

/// ENUM_MSTX_EVENT_TYPE as msprof numbers it. The mstx API's marks are
/// marker_ex, its ranges start/end.
enum class mstx_event_type : int { marker = 0, push_pop = 1, start_end = 2, marker_ex = 3 };

/// ENUM_API_TYPE's "mstx": PYTORCH_API rows of mstx calls.
inline constexpr std::int64_t api_type_mstx = 50004;

/// The database schema version the tables follow, as META_DATA rows.
inline constexpr std::pair<const char*, const char*> schema_version[] = {{"SCHEMA_VERSION", "1.2.0"},
                                                                         {"SCHEMA_VERSION_MAJOR", "1"},
                                                                         {"SCHEMA_VERSION_MINOR", "2"},
                                                                         {"SCHEMA_VERSION_MICRO", "0"}};

/// The tables, as msprof declares them, then npuprof's own (NPUPROF_*).
inline constexpr const char* database_schema = R"(
CREATE TABLE STRING_IDS(id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE ENUM_MSTX_EVENT_TYPE(id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO ENUM_MSTX_EVENT_TYPE VALUES (0, 'marker'), (1, 'push/pop'), (2, 'start/end'), (3, 'marker_ex');
CREATE TABLE MSTX_EVENTS(startNs INTEGER, endNs INTEGER, eventType INTEGER, rangeId INTEGER, category INTEGER,
  message INTEGER, globalTid INTEGER, endGlobalTid INTEGER, domainId INTEGER, connectionId INTEGER);
CREATE TABLE TASK(startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, globalTaskId INTEGER,
  globalPid INTEGER, taskType INTEGER, contextId INTEGER, streamId INTEGER, taskId INTEGER, modelId INTEGER);
CREATE TABLE SESSION_TIME_INFO(startTimeNs INTEGER, endTimeNs INTEGER);
CREATE TABLE META_DATA(name TEXT, value TEXT);
CREATE TABLE HOST_INFO(hostUid TEXT, hostName TEXT);
CREATE TABLE RANK_DEVICE_MAP(rankId INTEGER, deviceId INTEGER);
CREATE TABLE NPU_INFO(id INTEGER, name TEXT);
CREATE TABLE STEP_TIME(id INTEGER, startNs INTEGER, endNs INTEGER);
CREATE TABLE PYTORCH_API(startNs TEXT, endNs TEXT, globalTid INTEGER, connectionId INTEGER, name INTEGER,
  sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, inputShapes INTEGER, callchainId INTEGER, type INTEGER);
CREATE TABLE CONNECTION_IDS(id INTEGER, connectionId INTEGER);
CREATE TABLE ENUM_API_TYPE(id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO ENUM_API_TYPE VALUES (5000, 'runtime'), (5500, 'communication'), (10000, 'node'), (15000, 'model'),
  (20000, 'acl'), (50001, 'op'), (50002, 'queue'), (50003, 'trace'), (50004, 'mstx');
CREATE TABLE ENUM_HCCL_DATA_TYPE(id INTEGER PRIMARY KEY, name TEXT);
INSERT INTO ENUM_HCCL_DATA_TYPE VALUES (0, 'INT8'), (1, 'INT16'), (2, 'INT32'), (3, 'FP16'), (4, 'FP32'), (5, 'INT64'),
  (6, 'UINT64'), (7, 'UINT8'), (8, 'UINT16'), (9, 'UINT32'), (10, 'FP64'), (11, 'BFP16'), (12, 'INT128'), (14, 'HIF8'),
  (15, 'FP8E4M3'), (16, 'FP8E5M2'), (17, 'FP8E8M0'), (255, 'RESERVED'), (65534, 'N/A'), (65535, 'INVALID_TYPE');
CREATE TABLE CPU_USAGE(timestampNs INTEGER, cpuId TEXT, usage NUMERIC);
CREATE TABLE HOST_MEM_USAGE(timestampNs INTEGER, usage NUMERIC);
CREATE TABLE NPUPROF_COUNTERS(timestampNs INTEGER, globalTid INTEGER, domainId INTEGER, name INTEGER, value NUMERIC);
CREATE TABLE NPUPROF_THREADS(globalTid INTEGER PRIMARY KEY, tid INTEGER, name INTEGER);
CREATE TABLE NPUPROF_STREAMS(streamId INTEGER PRIMARY KEY, handle INTEGER, name INTEGER);
)";

/// One SQLite connection writing one new file; every failure throws
/// npuprof::error naming the file and SQLite's reason.
class sqlite_file {
 public:
  /// Opens the existing file `open_path`; messages name it `path`.
  sqlite_file(const std::string& open_path, std::string path) : path_(std::move(path)) {
    // One thread uses the connection: no lock around each call.
    if (::sqlite3_open_v2(open_path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      fail();
    }
    // One transaction into a file that is new: a journal would only slow
    // it down; a failed write removes the file.
    exec(
        "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
        "BEGIN;");
  }
  ~sqlite_file() {
    for (sqlite3_stmt* s : statements_) ::sqlite3_finalize(s);
    ::sqlite3_close(db_);
  }
  sqlite_file(const sqlite_file&) = delete;
  sqlite_file& operator=(const sqlite_file&) = delete;

  void exec(const char* sql) {
    if (::sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail();
  }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (::sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) fail();
    statements_.push_back(s);
    return s;
  }

  /// Binds `values` to `s` (integers, doubles, text, nullptr for NULL), runs
  /// it and resets it for the next row.
  template <class... V>
  void insert(sqlite3_stmt* s, const V&... values) {
    int column = 0;
    (bind_value(s, ++column, values), ...);
    step(s);
  }
  /// Runs `s`, whose values are bound, and resets it.
  void step(sqlite3_stmt* s) {
    if (::sqlite3_step(s) != SQLITE_DONE) fail();
    ::sqlite3_reset(s);
  }
  void bind_value(sqlite3_stmt* s, int column, std::int64_t v) { check(::sqlite3_bind_int64(s, column, v)); }
  void bind_value(sqlite3_stmt* s, int column, double v) { check(::sqlite3_bind_double(s, column, v)); }
  void bind_value(sqlite3_stmt* s, int column, std::nullptr_t) { check(::sqlite3_bind_null(s, column)); }
  void bind_value(sqlite3_stmt* s, int column, std::string_view v) {
    check(::sqlite3_bind_text64(s, column, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }

  /// Commits and closes; the file is complete only after this returns.
  void close() {
    exec("COMMIT;");
    for (sqlite3_stmt* s : statements_) ::sqlite3_finalize(s);
    statements_.clear();
    if (::sqlite3_close(db_) != SQLITE_OK) fail();
    db_ = nullptr;
  }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail();
  }
  [[noreturn]] void fail() {
    const std::string why = db_ != nullptr ? ::sqlite3_errmsg(db_) : "out of memory";
    throw error("npuprof: cannot write '" + path_ + "': " + why);
  }

  std::string path_;
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> statements_;
};

/// Rows of integers for one table (a table's name, or a name with the columns
/// the rows fill: "T(a, b)"), inserted `batch` rows per statement: a
/// statement's run costs more than a row's values.
class integer_rows {
 public:
  static constexpr int batch = 64;

  integer_rows(sqlite_file& db, const std::string& table, int columns) : db_(db), columns_(columns) {
    std::string row = "(?";
    for (int i = 1; i < columns; ++i) row += ", ?";
    row += ")";
    std::string many = "INSERT INTO " + table + " VALUES " + row;
    for (int i = 1; i < batch; ++i) many += ", " + row;
    one_ = db.prepare(("INSERT INTO " + table + " VALUES " + row).c_str());
    many_ = db.prepare(many.c_str());
    pending_.reserve(static_cast<std::size_t>(columns) * batch);
  }

  void add(std::initializer_list<std::int64_t> row) {
    pending_.insert(pending_.end(), row.begin(), row.end());
    if (pending_.size() == static_cast<std::size_t>(columns_) * batch) {
      run(many_, 0, pending_.size());
      pending_.clear();
    }
  }

  /// Inserts the rows still pending.
  void flush() {
    for (std::size_t at = 0; at < pending_.size(); at += static_cast<std::size_t>(columns_)) {
      run(one_, at, static_cast<std::size_t>(columns_));
    }
    pending_.clear();
  }

 private:
  // Binds `values` pending values from `from` to `s` and runs it.
  void run(sqlite3_stmt* s, std::size_t from, std::size_t values) {
    for (std::size_t i = 0; i < values; ++i) db_.bind_value(s, static_cast<int>(i + 1), pending_[from + i]);
    db_.step(s);
  }

  sqlite_file& db_;
  int columns_;
  sqlite3_stmt* one_;
  sqlite3_stmt* many_;
  std::vector<std::int64_t> pending_;
};

/// The rows of one database, added a window of decoded events at a time.
class database_rows {
 public:
  database_rows(sqlite_file& db, const trace_data& d)
      : db_(db),
        d_(d),
        mstx_(db, "MSTX_EVENTS", 10),
        task_(db, "TASK", 11),
        connections_(db, "CONNECTION_IDS", 2),
        api_(db, "PYTORCH_API(startNs, endNs, globalTid, connectionId, name, type)", 6) {
    strings_ = db.prepare("INSERT INTO STRING_IDS VALUES (?, ?)");
    counters_ = db.prepare("INSERT INTO NPUPROF_COUNTERS VALUES (?, ?, ?, ?, ?)");
    cpu_ = db.prepare("INSERT INTO CPU_USAGE VALUES (?, 'process', ?)");
    memory_ = db.prepare("INSERT INTO HOST_MEM_USAGE VALUES (?, ?)");
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    memory_mib_ = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) / 1048576.0 : 0;
  }

  /// The events of one window, and the device events pointing into them.
  void add(const std::vector<trace_event>& events, const std::vector<device_event>& device) {
    connection_.assign(events.size(), db_none);
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (events[i].what != trace_event::type::counter) connection_[i] = next_connection_++;
    }
    for (std::size_t i = 0; i < events.size(); ++i) add_event(events[i], connection_[i]);
    for (const device_event& e : device) {
      if (e.host < events.size()) add_task(e, connection_[e.host]);
    }
  }

  /// Everything that is not an event: session, host, threads, streams,
  /// metadata.
  void finish(const nlohmann::json& metadata) {
    mstx_.flush();
    task_.flush();
    connections_.flush();
    api_.flush();
    sqlite3_stmt* steps = db_.prepare("INSERT INTO STEP_TIME VALUES (?, ?, ?)");
    for (const step_span& s : d_.steps) db_.insert(steps, std::int64_t{s.id}, epoch(s.start_ns), epoch(s.end_ns));
    const bool device = d_.backend.value("name", std::string()) == "acl";
    if (device) {
      sqlite3_stmt* npu = db_.prepare("INSERT INTO NPU_INFO VALUES (?, ?)");
      db_.insert(npu, std::int64_t{d_.device_id},
                 std::string_view(d_.device_name.empty() ? std::string("UNKNOWN") : metadata_text(d_.device_name)));
    }
    sqlite3_stmt* session = db_.prepare("INSERT INTO SESSION_TIME_INFO VALUES (?, ?)");
    db_.insert(session, epoch(d_.start_ns), epoch(d_.end_ns));
    sqlite3_stmt* host = db_.prepare("INSERT INTO HOST_INFO VALUES (?, ?)");
    db_.insert(host, std::string_view(metadata_text(host_uid())), std::string_view(metadata_text(d_.hostname)));
    sqlite3_stmt* rank = db_.prepare("INSERT INTO RANK_DEVICE_MAP VALUES (?, ?)");
    db_.insert(rank, std::int64_t{d_.config.value("rank", -1)}, std::int64_t{device ? d_.device_id : -1});
    sqlite3_stmt* meta = db_.prepare("INSERT INTO META_DATA VALUES (?, ?)");
    for (const auto& [name, value] : schema_version) db_.insert(meta, std::string_view(name), std::string_view(value));
    // As torch_npu fills it from its profiler_metadata.json: each entry's
    // value as JSON (a string with its quotes).
    for (auto it = metadata.begin(); it != metadata.end(); ++it) {
      const std::string value = it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      db_.insert(meta, std::string_view(it.key()), std::string_view(value));
    }
    sqlite3_stmt* threads = db_.prepare("INSERT INTO NPUPROF_THREADS VALUES (?, ?, ?)");
    for (const std::uint32_t tid : threads_) {
      const auto named = d_.thread_names.find(tid);
      if (named == d_.thread_names.end() || named->second.empty()) continue;
      db_.insert(threads, global_tid(tid), std::int64_t{tid}, id_of_text(named->second));
    }
    sqlite3_stmt* streams = db_.prepare("INSERT INTO NPUPROF_STREAMS VALUES (?, ?, ?)");
    for (const auto& [handle, index] : stream_ids_) {
      const auto named = d_.stream_names.find(handle);
      if (named != d_.stream_names.end()) {
        db_.insert(streams, index, static_cast<std::int64_t>(handle), id_of_text(named->second));
      } else {
        db_.insert(streams, index, static_cast<std::int64_t>(handle), nullptr);
      }
    }
  }

 private:
  void add_event(const trace_event& e, std::int64_t connection) {
    note_thread(e.tid);
    if (e.end_tid != e.tid) note_thread(e.end_tid);
    const std::int64_t start = epoch(e.ts), tid = global_tid(e.tid);
    switch (e.what) {
      case trace_event::type::slice:
        mstx_.add({start, epoch(e.ts + e.dur), static_cast<std::int64_t>(mstx_event_type::start_end), db_none, db_none,
                   id_of_name(e.name), tid, global_tid(e.end_tid), id_of_domain(e.domain), connection});
        break;
      case trace_event::type::instant:
        mstx_.add({start, start, static_cast<std::int64_t>(mstx_event_type::marker_ex), db_none, db_none,
                   id_of_name(e.name), tid, tid, id_of_domain(e.domain), connection});
        add_api_call(start, tid, id_of_name(e.name), connection);
        break;
      case trace_event::type::counter:
        add_counter(e, start, tid);
        break;
    }
  }

  // A mark is also the framework's call of it, as torch_npu records its
  // mstx calls: a PYTORCH_API row linked to the event through
  // CONNECTION_IDS (the cluster analysis reads a mark's framework time so).
  void add_api_call(std::int64_t at, std::int64_t tid, std::int64_t name, std::int64_t connection) {
    const std::int64_t link = next_api_link_++;
    api_.add({at, at, tid, link, name, api_type_mstx});
    connections_.add({link, connection});
  }

  // Every counter goes to NPUPROF_COUNTERS; host_sys's CPU and memory also
  // to msprof's tables for them.
  void add_counter(const trace_event& e, std::int64_t at, std::int64_t tid) {
    const double value = e.value_is_double ? e.value.f64 : static_cast<double>(e.value.i64);
    if (e.value_is_double && !std::isfinite(value)) {
      db_.insert(counters_, at, tid, id_of_domain(e.domain), id_of_name(e.name), nullptr);  // null in the JSON too
      return;
    }
    if (e.value_is_double) {
      db_.insert(counters_, at, tid, id_of_domain(e.domain), id_of_name(e.name), value);
    } else {
      db_.insert(counters_, at, tid, id_of_domain(e.domain), id_of_name(e.name), e.value.i64);
    }
    if (e.domain >= d_.domains.size() || d_.domains[e.domain] != "host_sys" || e.name >= d_.strings.size()) return;
    const std::string& name = d_.strings[e.name];
    if (name == "cpu_percent") db_.insert(cpu_, at, value);
    if (name == "rss_mib" && memory_mib_ > 0) db_.insert(memory_, at, 100.0 * value / memory_mib_);
  }

  void add_task(const device_event& e, std::int64_t connection) {
    const auto found = stream_ids_.try_emplace(e.stream, static_cast<std::int64_t>(stream_ids_.size()));
    const std::int64_t stream = found.first->second;
    const std::int64_t start = epoch(e.ts);
    const std::int64_t task_type = id_of_text(e.instant ? "MSTX_MARK" : "MSTX_RANGE");
    task_.add({start, e.instant ? start : epoch(e.ts + e.dur), std::int64_t{d_.device_id}, connection, next_task_++,
               std::int64_t{d_.pid}, task_type, db_none, stream, tasks_on_[stream]++, db_none});
  }

  // The threads of the events, named in NPUPROF_THREADS. Events come
  // thread by thread: the last one is checked first.
  void note_thread(std::uint32_t tid) {
    if (tid != last_thread_) threads_.insert(tid);
    last_thread_ = tid;
  }

  std::int64_t epoch(std::int64_t steady_ns) const noexcept { return d_.wall_start_ns + (steady_ns - d_.start_ns); }
  // msprof's globalTid: the process id above, the thread id below.
  std::int64_t global_tid(std::uint32_t tid) const noexcept {
    return static_cast<std::int64_t>(std::uint64_t{d_.pid} << 32 | tid);
  }

  std::int64_t id_of_name(std::uint32_t name) {
    if (name >= name_ids_.size()) name_ids_.resize(std::max<std::size_t>(name + 1, d_.strings.size()), 0);
    std::int64_t& id = name_ids_[name];
    if (id == 0) id = id_of_text(name < d_.strings.size() ? d_.strings[name] : std::string());
    return id;
  }
  std::int64_t id_of_domain(std::uint16_t domain) {
    if (domain >= domain_ids_.size()) domain_ids_.resize(std::max<std::size_t>(domain + 1, d_.domains.size()), 0);
    std::int64_t& id = domain_ids_[domain];
    if (id == 0) id = id_of_text(domain < d_.domains.size() ? d_.domains[domain] : std::string("?"));
    return id;
  }
  // Each text once in STRING_IDS, whatever names it, as valid UTF-8 (as
  // the JSON trace has it): SQLite's TEXT holds nothing else.
  std::int64_t id_of_text(std::string_view raw) {
    const auto found = text_ids_.try_emplace(valid_utf8(raw), static_cast<std::int64_t>(text_ids_.size()) + 1);
    if (found.second) db_.insert(strings_, found.first->second, std::string_view(found.first->first));
    return found.first->second;
  }

  // Text as profiler_metadata.json has it: invalid UTF-8 replaced the way
  // its writer replaces it.
  static std::string metadata_text(const std::string& text) {
    const std::string quoted = nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return nlohmann::json::parse(quoted).get<std::string>();
  }

  static std::string host_uid() {
    std::ifstream in("/etc/machine-id");
    std::string id;
    in >> id;
    return id;
  }

  sqlite_file& db_;
  const trace_data& d_;
  integer_rows mstx_, task_, connections_, api_;
  sqlite3_stmt *strings_, *counters_, *cpu_, *memory_;
  double memory_mib_ = 0;
  std::vector<std::int64_t> connection_;  // of each event of the window
  std::int64_t next_connection_ = first_mstx_connection, next_task_ = 0, next_api_link_ = 0;
  std::vector<std::int64_t> name_ids_, domain_ids_;  // STRING_IDS ids by index, 0 until used
  std::unordered_map<std::string, std::int64_t> text_ids_;
  std::set<std::uint32_t> threads_;
  std::uint32_t last_thread_ = 0;
  std::unordered_map<std::uint64_t, std::int64_t> stream_ids_;  // handle -> streamId
  std::unordered_map<std::int64_t, std::int64_t> tasks_on_;     // streamId -> tasks so far
};

/// The database's file name for `rank` (-1: none), as torch_npu names it.
inline std::string database_file_name(int rank) {
  return rank >= 0 ? "ascend_pytorch_profiler_" + std::to_string(rank) + ".db" : "ascend_pytorch_profiler.db";
}

/// `name` inside `dir` by the directory's descriptor: the directory is the
/// one npuprof made even if a symlink took its place since.
inline std::string through_descriptor(const output_directory& dir, const std::string& name) {
  if (::access("/proc/self/fd", X_OK) != 0) return dir.path_of(name);
  return "/proc/self/fd/" + std::to_string(dir.fd()) + "/" + name;
}

/// Throws unless `name` in `dir` is still `file`, the file npuprof made,
/// and it was written to.
inline void check_written(const output_directory& dir, const std::string& name, const unique_fd& file) {
  struct stat made {
  }, there{};
  const bool same = ::fstat(file.get(), &made) == 0 &&
                    ::fstatat(dir.fd(), name.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(there.st_mode) &&
                    made.st_ino == there.st_ino && made.st_dev == there.st_dev;
  if (!same || made.st_size == 0) {
    throw error("npuprof: cannot write '" + dir.path_of(name) + "': the file was replaced while it was written");
  }
}

/// Writes the database of `c` into `dir`. On failure nothing of it is left
/// and npuprof::error names the file.
inline void write_database(const collected& c, output_directory& dir, const std::string& trace_id,
                           const nlohmann::json& user) {
  output_directory sub = dir.subdirectory("ASCEND_PROFILER_OUTPUT");
  try {
    const std::string name = database_file_name(c.header.config.value("rank", -1));
    // Made here (exclusive, mode 0640, no symlink followed) and kept open;
    // SQLite reaches it through the directory's descriptor, and the file
    // is checked to be this one once written.
    const unique_fd file = sub.create(name);
    trace_data d = c.header;  // gains strings and counts while decoding
    d.events.reserve(export_window_events);
    sqlite_file db(through_descriptor(sub, name), sub.path_of(name));
    db.exec(database_schema);
    database_rows rows(db, d);
    std::size_t events = 0, device_events = 0;
    decode_by_thread(c, d, export_window_events, [&](std::uint32_t, bool) {
      events += d.events.size();
      device_events += d.device_events.size();
      rows.add(d.events, d.device_events);
      d.events.clear();
      d.device_events.clear();
    });
    nlohmann::json metadata = render_metadata(d, events, device_events, trace_id, user);
    metadata["counts"].erase("overlapping_ranges");  // about the JSON's tracks: a database has none
    rows.finish(metadata);
    db.close();
    check_written(sub, name, file);
  } catch (...) {
    sub.discard();
    throw;
  }
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
