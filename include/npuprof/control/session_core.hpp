// The session's engine: what a running session owns (the drainer, the
// drained records, the device backend, the live metrics) and how it turns
// them into written traces. npuprof::session is its handle; this header is
// compiled only where the implementation is (see <npuprof/session.hpp>).
#pragma once

#include "../marker/abi.hpp"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "../backend/backend.hpp"
#include "../marker/buffer.hpp"
#include "../marker/diagnostics.hpp"
#include "../clock.hpp"
#include "config_keys.hpp"
#include "../engine/chunk_pool.hpp"
#include "../engine/collected.hpp"
#include "drained_records.hpp"
#include "../engine/drainer.hpp"
#include "../engine/dump_signal.hpp"
#include "../engine/host_sys.hpp"
#include "../metrics/live_metrics.hpp"
#include "../metrics/server_slot.hpp"
#include "../engine/process_hooks.hpp"
#include "../engine/schedule_driver.hpp"
#include "../engine/state.hpp"
#include "../error.hpp"
#include "export_formats.hpp"
#include "../export/file.hpp"
#include "../export/output_dir.hpp"
#include "../export/trace_files.hpp"
#include "../naming.hpp"
#include "../schedule.hpp"
#include "../trace_data.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

namespace detail {
class session_core;
inline void stop_active_session_for(const char* why);
inline void abandon_session_in_child(session_core* s) noexcept;
class active_session;
inline std::filesystem::path dump_active_session(const std::string& reason);
}  // namespace detail

/// What npuprof::session does, and holds while it runs: see that class for
/// what each call promises.
class detail::session_core {
 public:
  /// A session with `cfg` (by default: the defaults and the environment),
  /// not yet started. Throws config_error when `cfg` is not valid.
  explicit session_core(config cfg) : cfg_(std::move(cfg)) {
    cfg_.validate();
    detail::keep_known_export_types(cfg_, cfg_.source);
    detail::install_control_table();
    if (detail::control() == nullptr) {
      char why[320];
      detail::describe_abi_mismatch(why, sizeof why, unversioned::process_abi.load());
      throw error(why);
    }
    detail::pool();  // installs the chunk pool for recording threads
  }

  /// A session still running is stopped and written (a flight recorder
  /// with dump_at_exit false only stops). Waits for dumps that other threads
  /// began through npuprof::dump() to return.
  ~session_core() {
    if (running()) {
      try {
        if (cfg_.flight.enabled && !cfg_.flight.dump_at_exit) {
          cancel();
        } else {
          run_.stop_reason = "session destroyed";
          stop();
        }
      } catch (const std::exception& e) {
        detail::say_error(e.what());
      }
    }
    // Also a signal dump whose on_trace_ready stopped this session: its
    // thread, detached then, clears dumper_busy_ as the last thing it does.
    while (users_.load(std::memory_order_acquire) != 0 || dumper_busy_.load(std::memory_order_acquire)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  session_core(const session_core&) = delete;
  session_core& operator=(const session_core&) = delete;

  /// Starts recording. Throws npuprof::error when this or another session is
  /// already running.
  void start();

  /// Stops recording and writes the output directory under the configured
  /// output_dir. Returns its path. Throws npuprof::error when it cannot be
  /// written; the data is kept, and write_to() can write it elsewhere.
  /// Under a schedule, writes the cycle in progress if it was recording and
  /// returns the last directory written (empty when there was none).
  std::filesystem::path stop();

  /// Stops recording and throws away what was recorded, writing nothing.
  void cancel();

  /// Throws away what was recorded so far (every event stamped before the
  /// call, and the drop counts) and goes on recording.
  void clear();

  /// Ends the current step. Under a schedule, the next step's action takes
  /// effect, and the cycle whose last recording step just ended is written
  /// (on this thread). Without one, steps are only counted.
  void step();

  /// Writes what the session holds now (a flight recorder: its window) into
  /// a new output directory and returns its path; recording goes on, and
  /// nothing is taken away, so two dumps in a row give two complete traces.
  std::filesystem::path dump(const std::string& reason = "requested");

  /// Writes the data of the last stop() into a new output directory under
  /// `parent` and returns its path.
  std::filesystem::path write_to(const std::string& parent);

  /// Whether the session records now: between start() and stop().
  bool running() const noexcept { return running_.load(std::memory_order_acquire); }
  /// The configuration it runs with, validated.
  const config& configuration() const noexcept { return cfg_; }
  /// The directory the session wrote last.
  std::filesystem::path output_path() const {
    std::lock_guard<std::mutex> lock(data_mutex_);
    return output_;
  }
  /// The events of the last stop() (or schedule cycle), decoded when first
  /// asked for: a trace is written without decoding all of it at once, and
  /// the records stay (outside the memory cap) until the next stop() or
  /// cycle, which the returned reference is valid until.
  const trace_data& data() const;
  /// This session's trace id, written to the metadata: from
  /// config::trace_id_callback, else generated.
  const std::string& trace_id() const noexcept { return trace_id_; }
  /// Steps ended so far, and what the current one does.
  long current_step() const noexcept { return steps_.step(); }
  /// What the schedule does in the current step: nothing, warm up, record.
  step_action current_action() const noexcept { return steps_.action(); }

  /// Adds `key: value` to the "user" section of profiler_metadata.json (the
  /// model, the build, the request mix...). A later value for a key wins.
  void add_metadata(const std::string& key, const nlohmann::json& value) {
    std::lock_guard<detail::recursive_mutex> lock(detail::state().control);  // a dump may be copying them
    user_metadata_[key] = value;
  }

  /// Where live metrics are served while the session runs ("host:port",
  /// with the port taken for port 0), or "" when they are not.
  std::string metrics_address() const {
    std::lock_guard<std::mutex> lock(data_mutex_);
    return metrics_address_;
  }

 private:
  friend void detail::stop_active_session_for(const char* why);
  friend void detail::abandon_session_in_child(session_core* s) noexcept;
  friend class detail::active_session;
  void abandon_in_child() noexcept;
  void refuse_in_fork_child(const char* what) const {
    if (parents_copy_) {
      throw error(std::string("npuprof: cannot ") + what +
                  " the session: it runs in the parent process, not in this fork() child");
    }
  }
  void halt();
  void retire_dumper();
  void trim_window();
  void flush();
  void feed_metrics();
  void stop_metrics();
  void start_signal_dump();
  void reset_counts();
  void discard_stale_records();
  std::shared_ptr<detail::collected> collect(clock_point from, clock_point end, const detail::device_times* device,
                                             bool take_counts, std::uint64_t open_scoped);
  void finish_collection(detail::collected& c, std::int64_t end_ns, detail::eviction evicted);
  void end_step(std::uint64_t now_ticks);
  std::vector<step_span> steps_so_far(bool with_current, clock_point end) const;
  void keep_collected(std::shared_ptr<detail::collected> c);
  std::filesystem::path write_data(const detail::collected& c, const std::string& parent);
  bool wants_export(std::string_view type) const {
    return std::find(cfg_.export_type.begin(), cfg_.export_type.end(), type) != cfg_.export_type.end();
  }
  std::filesystem::path deliver(const detail::collected& c);
  std::filesystem::path announce(const std::filesystem::path& dir);

  config cfg_;
  detail::drained_records records_;  // guarded by control
  detail::drainer drainer_;
  std::shared_ptr<detail::live_metrics> metrics_;  // null: no metrics
  std::unique_ptr<detail::metrics_server> metrics_server_;
  std::string metrics_address_;                       // guarded by data_mutex_
  std::optional<detail::host_sys_sampler> host_sys_;  // used on the drainer's thread only
  std::atomic<bool> running_{false};
  // What one run (start() to stop()) knows; start() resets it whole.
  struct run_state {
    clock_point start_point{};
    clock_point cut_point{};  // records before it belong to an earlier cycle
    // Records stamped before it belong to no trace: the session's start, the
    // last clear(), or the start of the last cycle that followed a pause.
    std::uint64_t stale_before = 0;
    std::int64_t wall_start = 0;
    bool stopping = false;  // guarded by control
    int dumps = 0;
    std::string stop_reason = "stop";
    std::uint64_t drops_taken =
        0;  // drops counted into earlier cycles or cleared, for live metrics (guarded by control)
    // Steps, once step() was called (guarded by control): the ended ones,
    // the latest max_kept_steps of them, and when the current one began.
    // Their bounds are raw counter ticks, as the records' are, so that the
    // same map puts a record between the two step() calls it came between.
    bool stepped = false;
    struct step_ticks {
      long id;
      std::uint64_t begin, end;
    };
    std::deque<step_ticks> steps;
    std::uint64_t steps_let_go = 0;
    std::uint64_t step_began = 0;
  };
  static constexpr std::size_t max_kept_steps = std::size_t{1} << 16;
  run_state run_;
  detail::schedule_driver steps_;  // restarted by start()
  // Serialises dumps with everything that recycles segments. Taken before
  // state().control; the drainer only ever tries it. Recursive: an error
  // thrown out of dump() that nobody catches ends in std::terminate without
  // unwinding, so the lock is still held when the terminate handler stops
  // the session on the same thread.
  std::recursive_mutex dump_mutex_;
  // Callers that found this session through state().active (the free dump(),
  // the exit and terminate handlers) and still use it; the destructor waits
  // for them. Taken under state().control.
  std::atomic<int> users_{0};
  std::thread dumper_;  // a dump asked for by signal (guarded by control)
  std::atomic<bool> dumper_busy_{false};
  bool parents_copy_ = false;  // this process is a fork() child of the one running it
  std::mutex host_sys_mutex_;
  std::vector<std::string> host_sys_unavailable_;  // guarded by host_sys_mutex_
  detail::dump_signal signal_;
  detail::device_backend* device_ = nullptr;  // null: host only
  nlohmann::json backend_note_;
  detail::device_times device_times_;
  std::shared_ptr<detail::collected> collected_ = std::make_shared<detail::collected>();  // of the last stop or cycle
  mutable std::mutex data_mutex_;
  mutable std::shared_ptr<trace_data> data_;  // collected_, decoded when first asked for
  std::filesystem::path output_;              // guarded by data_mutex_: cycles and dumps may be written at once
  std::string trace_id_;
  nlohmann::json user_metadata_ = nlohmann::json::object();
};

namespace detail {

/// The running session, if any, kept alive while this object lives: for
/// callers that find it through state().active on any thread, while its
/// owner may stop and destroy it (the destructor waits for them).
class active_session {
 public:
  active_session() {
    std::lock_guard<detail::recursive_mutex> lock(state().control);
    session_ = state().active.load(std::memory_order_acquire);
    if (session_ != nullptr) session_->users_.fetch_add(1, std::memory_order_relaxed);
  }
  ~active_session() {
    if (session_ != nullptr) session_->users_.fetch_sub(1, std::memory_order_release);
  }
  active_session(const active_session&) = delete;
  active_session& operator=(const active_session&) = delete;

  session_core* get() const noexcept { return session_; }

 private:
  session_core* session_;
};

// Stops and writes the running session, if any; `why` says when ("exit",
// "terminate").
inline void stop_active_session_for(const char* why) {
  const active_session active;
  session_core* s = active.get();
  if (s == nullptr || !s->running()) return;
  try {
    const flight_recorder& flight = s->configuration().flight;
    if (flight.enabled && !flight.dump_at_exit) {
      s->cancel();
      return;
    }
    s->run_.stop_reason = why;
    const auto dir = s->stop();
    if (dir.empty()) {
      detail::say("session still running at %s: stopped, nothing to write", why);
    } else {
      detail::say("session still running at %s: stopped, trace written to %s", why, dir.string().c_str());
    }
  } catch (const std::exception& e) {
    detail::say_error(e.what());
  }
}

// In a fork() child, for the process hooks: the parent's session lets go.
inline void abandon_session_in_child(session_core* s) noexcept { s->abandon_in_child(); }

inline std::string new_trace_id() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^ static_cast<std::uint64_t>(wall_ns()));
  return fmt::format("{:016x}{:016x}", gen(), gen());
}

inline std::string process_name() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name.empty() ? std::string("process") : name;
}

}  // namespace detail

inline void detail::session_core::start() {
  for (const std::string& type : cfg_.export_type) {
    if (detail::writer_of(type) == nullptr) {
      const std::size_t i = detail::export_format_index(type);
      throw config_error("export_type \"" + type +
                         "\" needs its writer: " + std::string(detail::export_formats()[i].needs));
    }
  }
  if (cfg_.metrics.enabled() && detail::installed_metrics_server() == nullptr) {
    throw config_error(
        "metrics need the metrics endpoint: include <npuprof/metrics.hpp> in the file that starts "
        "profiling and link prometheus-cpp (meson: npuprof_metrics_dep)");
  }
  detail::check_output_dir(cfg_.output_dir);  // its problems show now, not at the first write
  detail::process_state& st = detail::state();
  std::lock_guard<detail::recursive_mutex> lock(st.control);
  if (running()) throw error("npuprof: cannot start the session: it is already running");
  if (st.active.load(std::memory_order_acquire) != nullptr) {
    throw error(
        "npuprof: cannot start a session: another session is already running in this process; "
        "stop it first");
  }
  // Listening may fail (the port is taken): before anything else changes.
  std::shared_ptr<detail::live_metrics> metrics;
  std::unique_ptr<detail::metrics_server> metrics_server;
  if (cfg_.metrics.enabled()) {
    metrics = std::make_shared<detail::live_metrics>(cfg_.metrics);
    metrics_server = detail::installed_metrics_server()(cfg_.metrics, metrics);
  }
  const std::size_t cap = cfg_.flight.enabled ? cfg_.flight.memory_mb << 20 : cfg_.buffer_size_kb * 1024;
  detail::pool().configure(cfg_.chunk_size_kb * 1024, cap);
  discard_stale_records();
  detail::pool().top_up();
  trace_id_ = cfg_.trace_id_callback ? cfg_.trace_id_callback() : std::string();
  if (trace_id_.empty()) trace_id_ = detail::new_trace_id();
  run_ = run_state{};
  run_.start_point = run_.cut_point = sample_clock();
  run_.stale_before = run_.start_point.ticks;
  run_.wall_start = wall_ns() - (steady_ns() - run_.start_point.steady);
  run_.step_began = run_.start_point.ticks;
  steps_ = detail::schedule_driver(cfg_.schedule);
  records_.reset_eviction();
  metrics_ = std::move(metrics);
  records_.meter_with(metrics_.get());
  if (metrics_)
    metrics_->calibrate(run_.start_point.ticks, clock_calibration(st.origin, run_.start_point).ns_per_tick());
  metrics_server_ = std::move(metrics_server);
  if (metrics_server_) {
    std::lock_guard<std::mutex> data(data_mutex_);
    metrics_address_ = metrics_server_->address();
  }

  st.domains.set_filter({cfg_.mstx, cfg_.domain_include, cfg_.domain_exclude});
  detail::backend_choice backend = detail::choose_backend(cfg_);
  device_ = backend.device;
  backend_note_ = std::move(backend.note);
  if (backend.forwarder != nullptr) {
    detail::markers().forwarder.store(backend.forwarder, std::memory_order_release);
    st.domains.set_forwarding(true);
  }
  if (device_ != nullptr) {
    device_->begin_session(cfg_.device_events_per_stream);
    detail::markers().device.store(device_, std::memory_order_release);
  }
  st.active.store(this, std::memory_order_release);
  running_.store(true, std::memory_order_release);
  st.domains.set_recording(detail::records(steps_.action()));
  if (cfg_.flight.enabled) {
    detail::dump_signal::take();  // a signal raised before this session is not for it
    signal_.install(cfg_.flight.signal);
  }

  const auto period = std::chrono::milliseconds(
      std::min(cfg_.flush_interval_ms, cfg_.host_sys.empty() ? ~0u : cfg_.host_sys_interval_ms));
  drainer_.start(
      period,
      [this] {
        host_sys_.reset();
        if (!cfg_.host_sys.empty()) {
          host_sys_.emplace(cfg_.host_sys, std::int64_t{cfg_.host_sys_interval_ms} * 1'000'000);
        }
      },
      [this] { flush(); });
  detail::install_process_hooks({&detail::stop_active_session_for, &detail::abandon_session_in_child});
}

// Switches recording off, stops the background threads and takes every
// published record.
inline void detail::session_core::halt() {
  detail::process_state& st = detail::state();
  {
    std::lock_guard<detail::recursive_mutex> lock(st.control);
    if (!running()) throw error("npuprof: cannot stop the session: it is not running");
    st.domains.set_recording(false);
    st.domains.set_forwarding(false);
  }
  signal_.restore();
  drainer_.stop();
  stop_metrics();
  std::lock_guard<detail::recursive_mutex> lock(st.control);
  if (device_ != nullptr) {
    // Ranges that began recorded still end on the device: stop after them.
    detail::markers().device.store(nullptr, std::memory_order_release);
    device_times_ = device_->finish(std::chrono::milliseconds(cfg_.device_wait_ms));
  }
  records_.take_published();
}

// No more dumps by signal; waits for one in progress. Called before
// dump_mutex_ is taken, which that dump needs.
inline void detail::session_core::retire_dumper() {
  std::thread dumper;
  {
    std::lock_guard<detail::recursive_mutex> lock(detail::state().control);
    run_.stopping = true;
    dumper = std::move(dumper_);
  }
  if (!dumper.joinable()) return;
  if (dumper.get_id() == std::this_thread::get_id()) {
    dumper.detach();  // stopped from on_trace_ready of that dump: it ends by itself
  } else {
    dumper.join();
  }
}

// Flight recorder: segments drained before the window are no longer needed;
// and the window keeps half the memory cap at most, so that recording
// threads always find free chunks. A dump reading segments does not hold
// this up: what it reads is let go when it is done (dumps back to back must
// not let the window grow until recording drops).
inline void detail::session_core::trim_window() {
  const std::int64_t oldest = steady_ns() - static_cast<std::int64_t>(cfg_.flight.window_s * 1e9);
  records_.trim(oldest, (cfg_.flight.memory_mb << 20) / 2);
  if (device_ != nullptr) device_->forget_before(oldest);
}

// In a fork() child: the copy of the parent's session records nothing, owns
// no threads (they stayed in the parent) and writes nothing; the parent's
// session is unaffected.
inline void detail::session_core::abandon_in_child() noexcept {
  detail::process_state& st = detail::state();
  st.domains.set_recording(false);
  st.domains.set_forwarding(false);
  detail::markers().device.store(nullptr, std::memory_order_release);
  detail::markers().forwarder.store(nullptr, std::memory_order_release);
  signal_.restore();
  // The thread objects name threads of the parent: never joined, never destroyed.
  drainer_.abandon_in_child();
  // The endpoint's threads are the parent's too; its port stays the parent's.
  if (metrics_server_) metrics_server_->abandon_in_child();
  (void)metrics_server_.release();
  records_.meter_with(nullptr);
  if (dumper_.joinable()) detail::keep_parents_thread(std::move(dumper_));
  device_ = nullptr;
  parents_copy_ = true;
  running_.store(false, std::memory_order_release);
}

inline std::filesystem::path detail::session_core::stop() {
  refuse_in_fork_child("stop");
  retire_dumper();
  std::lock_guard<std::recursive_mutex> dumping(dump_mutex_);
  halt();
  std::shared_ptr<detail::collected> written;
  {
    std::lock_guard<detail::recursive_mutex> lock(detail::state().control);
    const clock_point end = sample_clock();
    if (!steps_.scheduled() || detail::records(steps_.action())) {  // else stopped between cycles: all written
      auto c =
          collect(run_.cut_point, end, device_ != nullptr ? &device_times_ : nullptr, true, records_.open_scoped());
      records_.move_into(*c);
      c->header.steps = steps_so_far(true, end);
      c->header.steps_not_kept = run_.steps_let_go;
      if (steps_.scheduled()) c->header.collection = steps_.cycle_note(true);
      if (!steps_.scheduled()) c->header.collection["reason"] = run_.stop_reason;  // stop, exit, terminate, ...
      finish_collection(*c, end.steady, records_.evicted());
      keep_collected(c);
      written = std::move(c);
    }
    device_times_ = detail::device_times();
    records_.recycle_all();
    running_.store(false, std::memory_order_release);
    detail::state().active.store(nullptr, std::memory_order_release);
  }
  if (!written) return output_path();
  return deliver(*written);
}
inline void detail::session_core::cancel() {
  refuse_in_fork_child("cancel");
  retire_dumper();
  std::lock_guard<std::recursive_mutex> dumping(dump_mutex_);
  halt();
  std::lock_guard<detail::recursive_mutex> lock(detail::state().control);
  device_times_ = detail::device_times();
  records_.recycle_all();
  running_.store(false, std::memory_order_release);
  detail::state().active.store(nullptr, std::memory_order_release);
}

inline void detail::session_core::clear() {
  refuse_in_fork_child("clear");
  std::lock_guard<std::recursive_mutex> dumping(dump_mutex_);
  std::lock_guard<detail::recursive_mutex> lock(detail::state().control);
  // Threads go on recording meanwhile, so what goes is decided by time, not
  // by where records are: everything taken so far is older than now; what
  // is still on its way is sorted out by its time stamp when decoded. Drop
  // counts start again first: a drop has no time stamp, and one after the
  // cut must not go uncounted (one just before it is counted, to be safe).
  reset_counts();
  run_.cut_point = sample_clock();
  run_.stale_before = run_.cut_point.ticks;
  records_.recycle_all();
}

inline void detail::session_core::step() {
  refuse_in_fork_child("step");
  if (!cfg_.schedule) {
    // Without a schedule a step is only noted: no dump being written holds
    // it up (a dump keeps dump_mutex_ while it writes).
    std::lock_guard<detail::recursive_mutex> lock(detail::state().control);
    if (!running()) throw error("npuprof: step(): the session is not running");
    end_step(raw_ticks());
    steps_.advance();
    return;
  }
  std::shared_ptr<detail::collected> cycle;
  {
    std::lock_guard<std::recursive_mutex> dumping(dump_mutex_);
    detail::process_state& st = detail::state();
    std::lock_guard<detail::recursive_mutex> lock(st.control);
    if (!running()) throw error("npuprof: step(): the session is not running");
    end_step(raw_ticks());
    const detail::step_change change = steps_.advance();
    if (!change.resumes()) st.domains.set_recording(detail::records(change.begins));
    if (change.saves_cycle()) {
      records_.take_published();
      detail::device_times device;
      if (device_ != nullptr) device = device_->finish(std::chrono::milliseconds(cfg_.device_wait_ms));
      const clock_point end = sample_clock();
      cycle = collect(run_.cut_point, end, device_ != nullptr ? &device : nullptr, true, records_.open_scoped());
      records_.move_into(*cycle);
      cycle->header.steps = steps_so_far(false, end);
      cycle->header.steps_not_kept = run_.steps_let_go;
      cycle->header.collection = steps_.cycle_note(false);
      finish_collection(*cycle, end.steady, records_.evicted());
      run_.cut_point = end;
      steps_.cycle_written();
    } else if (change.resumes()) {
      // A new cycle records from here: what came before belongs to none. It
      // is thrown away before recording resumes, as records threads publish
      // meanwhile could be thrown away with it, leaving a hole in the cycle.
      records_.drain_full();
      records_.recycle_all();
      discard_stale_records();
      run_.cut_point = sample_clock();
      run_.stale_before = run_.cut_point.ticks;
      st.domains.set_recording(true);
    }
    if (change.begins == step_action::warmup) detail::pool().top_up();
  }
  if (cycle) {
    keep_collected(cycle);
    deliver(*cycle);
  }
}

inline std::filesystem::path detail::session_core::dump(const std::string& reason) {
  refuse_in_fork_child("dump");
  std::lock_guard<std::recursive_mutex> dumping(dump_mutex_);
  detail::process_state& st = detail::state();
  std::vector<detail::segment> taken;
  std::deque<std::vector<std::uint64_t>> live;  // stable addresses for the segments
  detail::device_times device;
  clock_point from{}, cut{}, end{};
  detail::eviction evicted;
  std::uint64_t open_scoped = 0;
  std::vector<step_span> steps;
  std::uint64_t steps_not_kept = 0;
  {
    std::lock_guard<detail::recursive_mutex> lock(st.control);
    if (!running()) throw error("npuprof: cannot dump: the session is not running");
    // The dump's end is read before the buffers are: every record stamped
    // before it and published by then is in the dump, however long reading
    // them takes. Records written while they are read come too.
    cut = sample_clock();
    records_.drain_full();
    // What threads are writing now is copied, not taken: they go on
    // writing those chunks, and the next dump sees it again.
    std::vector<detail::segment> copied;
    st.threads.for_each_live([&](detail::thread_buffer& tb) {
      open_scoped += tb.open_scoped.load(std::memory_order_acquire);  // before the records: see take_published()
      detail::chunk* c = tb.current.load(std::memory_order_acquire);
      if (c == nullptr) return detail::wait_for_handover(tb);
      std::uint64_t* published = c->published.load(std::memory_order_acquire);
      if (published <= c->unread) return;
      const std::vector<std::uint64_t>& copy = live.emplace_back(c->unread, published);
      copied.push_back({nullptr, copy.data(), copy.data() + copy.size(), c->tid, false, 0, c});
    });
    // A chunk handed over while we looked is drained now (else its records
    // would be missing); one we copied is then taken whole instead of its copy.
    const std::size_t before = records_.segments().size();
    records_.drain_full();
    const auto& held = records_.segments();
    taken.assign(held.begin(), held.end());
    for (const detail::segment& c : copied) {
      const bool drained = std::any_of(held.begin() + static_cast<std::ptrdiff_t>(before), held.end(),
                                       [&](const detail::segment& s) { return s.origin == c.origin; });
      if (!drained) taken.push_back(c);
    }
    if (device_ != nullptr) device = device_->snapshot();
    from = run_.cut_point;
    end = sample_clock();
    steps = steps_so_far(true, end);
    steps_not_kept = run_.steps_let_go;
    evicted = records_.evicted();
    records_.reading_begins();
  }
  // Decoding and writing happen outside the control lock: the drainer goes
  // on draining and trimming, and keeps what it trims until the trace is
  // written (not until on_trace_ready returns: it may take long, or dump again).
  struct done_reading {
    session_core* s;
    void now() {
      if (s == nullptr) return;
      std::lock_guard<detail::recursive_mutex> lock(detail::state().control);
      s->records_.reading_ends();
      s = nullptr;
    }
    ~done_reading() { now(); }
  } reading{this};
  // Ranges still open are drawn up to `end`, past every record read.
  std::shared_ptr<detail::collected> c = collect(from, end, device_ != nullptr ? &device : nullptr, false, open_scoped);
  c->segments.assign(taken.begin(), taken.end());
  c->storage = std::move(live);  // the copies' records stay where the segments point
  c->header.end_ns = cut.steady;
  c->header.steps = std::move(steps);
  c->header.steps_not_kept = steps_not_kept;
  c->header.collection = {{"mode", cfg_.flight.enabled ? "flight_recorder" : "session"},
                          {"dump", ++run_.dumps},
                          {"reason", reason},
                          {"counts", "since the session started"}};
  finish_collection(*c, cut.steady, evicted);
  const std::filesystem::path dir = write_data(*c, cfg_.output_dir);
  reading.now();
  return announce(dir);
}

// Dumps the running session, if any, for npuprof::dump().
inline std::filesystem::path detail::dump_active_session(const std::string& reason) {
  const active_session active;
  if (active.get() == nullptr) throw error("npuprof: cannot dump: no session is running");
  return active.get()->dump(reason);
}

inline std::filesystem::path detail::session_core::write_to(const std::string& parent) {
  std::shared_ptr<detail::collected> c;
  {
    std::lock_guard<std::mutex> lock(data_mutex_);
    c = collected_;
  }
  const std::filesystem::path dir = write_data(*c, parent);
  std::lock_guard<std::mutex> lock(data_mutex_);
  output_ = dir;
  return dir;
}

inline std::filesystem::path detail::session_core::write_data(const detail::collected& c, const std::string& parent) {
  const trace_data& d = c.header;
  std::string worker = cfg_.worker_name.empty() ? d.hostname : cfg_.worker_name;
  if (cfg_.worker_name.empty() && cfg_.rank >= 0) worker += "_rank" + std::to_string(cfg_.rank);
  // Named for when it is written, not for when the data begins.
  detail::output_directory dir = detail::make_output_dir(parent, worker, d.pid, wall_ns());
  try {
    detail::write_file(
        dir, detail::profiler_info_name(d),
        detail::render_profiler_info(d).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    for (const detail::export_format& format : detail::export_formats()) {
      if (wants_export(format.name)) detail::writer_of(format.name)(c, dir, c.trace_id, c.user_metadata);
    }
  } catch (...) {
    // No half-written output directory is left for a viewer to trip over.
    dir.discard();
    throw;
  }
  return dir.path();
}

// Writes under the configured output_dir and tells on_trace_ready.
inline std::filesystem::path detail::session_core::deliver(const detail::collected& c) {
  return announce(write_data(c, cfg_.output_dir));
}

// Notes `dir` as the last written and tells on_trace_ready.
inline std::filesystem::path detail::session_core::announce(const std::filesystem::path& dir) {
  {
    std::lock_guard<std::mutex> lock(data_mutex_);
    output_ = dir;
  }
  if (cfg_.on_trace_ready) cfg_.on_trace_ready(dir);
  return dir;
}

// One flush of the drainer: host counters, full chunks, the reserve, device
// times, and for a flight recorder the window and a dump asked for by signal.
inline void detail::session_core::flush() {
  if (host_sys_) {
    host_sys_->poll(steady_ns());
    std::lock_guard<std::mutex> note(host_sys_mutex_);
    host_sys_unavailable_ = host_sys_->unavailable();
  }
  std::lock_guard<detail::recursive_mutex> control(detail::state().control);
  if (metrics_) {
    metrics_->calibrate(run_.start_point.ticks,
                        clock_calibration(detail::state().origin, sample_clock()).ns_per_tick());
  }
  records_.drain_full();
  detail::pool().top_up();
  if (device_ != nullptr) device_->resolve();
  if (metrics_) feed_metrics();
  if (cfg_.flight.enabled) {
    trim_window();
    start_signal_dump();
  }
}

// Live metrics, once a flush has drained the full chunks: what live threads
// published since, device times resolved, and the session's health.
inline void detail::session_core::feed_metrics() {
  detail::process_state& st = detail::state();
  metrics_->read_live();
  if (device_ != nullptr) metrics_->resolve_device(*device_, steady_ns());
  std::uint64_t dropped = run_.drops_taken + detail::markers().stats.unregistered_drops.load(std::memory_order_relaxed);
  for (auto& [tid, n] : st.threads.peek_drops_by_thread()) dropped += n;
  metrics_->end_flush(dropped, detail::pool().bytes_allocated());
}

// The endpoint stops with the session; records taken from now on are not
// measured.
inline void detail::session_core::stop_metrics() {
  metrics_server_.reset();
  {
    std::lock_guard<std::mutex> data(data_mutex_);
    metrics_address_.clear();
  }
  std::lock_guard<detail::recursive_mutex> lock(detail::state().control);
  records_.meter_with(nullptr);
  metrics_.reset();
}

// A dump asked for by signal runs on a thread of its own, so that draining
// goes on meanwhile. Called with the control lock held.
inline void detail::session_core::start_signal_dump() {
  if (run_.stopping || dumper_busy_.load(std::memory_order_acquire)) return;  // the flag waits
  if (!detail::dump_signal::take()) return;
  if (dumper_.joinable()) dumper_.join();  // finished: it cleared busy
  dumper_busy_.store(true, std::memory_order_release);
  const std::string reason = "signal " + detail::signal_name(cfg_.flight.signal);
  dumper_ = std::thread([this, reason] {
    try {
      const auto dir = dump(reason);
      detail::say("%s: flight recorder window written to %s", reason.c_str(), dir.string().c_str());
    } catch (const std::exception& e) {
      detail::say_error(e.what());
    }
    dumper_busy_.store(false, std::memory_order_release);
  });
}

// Records written after the previous session stopped belong to no session.
inline void detail::session_core::discard_stale_records() {
  detail::process_state& st = detail::state();
  while (detail::chunk* c = detail::pool().take_full()) detail::pool().recycle(c);
  st.threads.for_each_live([](detail::thread_buffer& tb) {
    if (detail::chunk* c = tb.current.load(std::memory_order_acquire)) {
      c->unread = c->published.load(std::memory_order_acquire);
    }
  });
  reset_counts();
}

inline void detail::session_core::reset_counts() {
  for (auto& [tid, n] : detail::state().threads.take_drops()) run_.drops_taken += n;
  detail::markers().stats.truncated_messages.exchange(0);
  detail::markers().stats.null_messages.exchange(0);
  run_.drops_taken += detail::markers().stats.unregistered_drops.exchange(0);
  detail::markers().stats.dropped_range_ends.exchange(0);
}

// What a trace says about itself, and the counts of what was lost, taken
// now; the records are added by the caller. `take_counts` resets the drop
// counts (the data ends a session or a cycle); a dump only reads them.
inline std::shared_ptr<detail::collected> detail::session_core::collect(clock_point from, clock_point end,
                                                                        const detail::device_times* device,
                                                                        bool take_counts, std::uint64_t open_scoped) {
  detail::process_state& st = detail::state();
  auto c = std::make_shared<detail::collected>();
  trace_data& d = c->header;
  d.clock = clock_calibration(st.origin, end);
  d.start_ns = from.steady;
  d.end_ns = end.steady;
  d.wall_start_ns = run_.wall_start + (from.steady - run_.start_point.steady);
  d.pid = static_cast<std::uint32_t>(::getpid());
  d.process_name = detail::process_name();
  d.hostname = detail::host_name();
  d.config = cfg_.to_json();
  d.domains = st.domains.names();
  for (auto& [tid, name] : st.threads.names()) d.thread_names[tid] = std::move(name);
  for (auto& [stream, name] : st.streams.all()) d.stream_names[reinterpret_cast<std::uintptr_t>(stream)] = name;
  // A dump collects outside the control lock; the drainer trims the
  // device's times and clock under it.
  std::lock_guard<detail::recursive_mutex> device_lock(st.control);
  if (device_ != nullptr) {
    d.backend = device_->describe();
    if (backend_note_.contains("mstx_forward")) d.backend["mstx_forward"] = backend_note_["mstx_forward"];
    d.device_id = device_->device();
    d.device_simulated = device_->simulated();
    d.device_name = device_->device_name();
  } else {
    d.backend = backend_note_;
  }
  if (device != nullptr) {
    c->device = *device;
    c->has_device = true;
  }
  // Records stamped before run_.stale_before belong to no trace. Every other
  // record taken belongs to this data, even one stamped just before `from`
  // and published after the previous cycle was cut.
  c->trace_id = trace_id_;
  c->user_metadata = user_metadata_;
  c->stale_before = run_.stale_before;
  c->end_ticks = end.ticks;
  c->begins_may_be_gone = cfg_.flight.enabled;
  auto count = [&](std::atomic<std::uint64_t>& n) { return take_counts ? n.exchange(0) : n.load(); };
  d.counts.dropped_range_ends = count(detail::markers().stats.dropped_range_ends);
  for (auto& [tid, n] : take_counts ? st.threads.take_drops() : st.threads.peek_drops_by_thread()) {
    d.counts.dropped_by_thread[tid] += n;
  }
  for (auto& [tid, n] : d.counts.dropped_by_thread) d.counts.dropped += n;
  d.counts.dropped += count(detail::markers().stats.unregistered_drops);
  if (take_counts) run_.drops_taken += d.counts.dropped;
  d.counts.truncated_messages = count(detail::markers().stats.truncated_messages);
  d.counts.null_messages = count(detail::markers().stats.null_messages);
  d.counts.rejected_domain_names = detail::markers().stats.rejected_domain_names.load();
  d.counts.domains_over_limit = st.domains.over_limit_count();
  d.counts.open_scoped_ranges = open_scoped;  // read with the records, not now: see take_published()
  d.counts.destroyed_domain_calls = count(detail::markers().stats.destroyed_domain_calls);
  d.counts.foreign_domain_handles = count(detail::markers().stats.foreign_domain_handles);
  d.counts.mstx_ranges_over_limit = count(detail::markers().stats.mstx_ranges_over_limit);
  return c;
}

// The last stop's or cycle's records, which data() decodes when asked.
inline void detail::session_core::keep_collected(std::shared_ptr<detail::collected> c) {
  std::lock_guard<std::mutex> lock(data_mutex_);
  collected_ = std::move(c);
  data_.reset();
}

inline const trace_data& detail::session_core::data() const {
  std::lock_guard<std::mutex> lock(data_mutex_);
  if (!data_) data_ = std::make_shared<trace_data>(detail::decode_all(*collected_));
  return *data_;
}

// What every written trace goes through: a flight recorder's window, then
// the duration threshold (applied while the records are decoded).
inline void detail::session_core::finish_collection(detail::collected& c, std::int64_t end_ns,
                                                    detail::eviction evicted) {
  trace_data& d = c.header;
  if (cfg_.flight.enabled) {
    const std::int64_t from = std::max(d.start_ns, end_ns - static_cast<std::int64_t>(cfg_.flight.window_s * 1e9));
    c.window = true;
    c.window_from_ns = from;
    c.complete_from_ns = std::max(from, evicted.until_ns);
    d.wall_start_ns += from - d.start_ns;  // the trace starts with its window
    d.start_ns = from;
    d.counts.evicted_bytes = evicted.bytes;
    d.collection["mode"] = "flight_recorder";
    d.collection["window_s"] = cfg_.flight.window_s;
    d.collection["window_start_ns"] = from;
    // The memory cap let go of records up to here: the window may be
    // incomplete before it.
    d.collection["complete_from_ns"] = std::max(from, evicted.until_ns);
  }
  if (!cfg_.host_sys.empty()) {
    std::lock_guard<std::mutex> note(host_sys_mutex_);
    d.collection["host_sys"] = {
        {"sources", cfg_.host_sys}, {"interval_ms", cfg_.host_sys_interval_ms}, {"unavailable", host_sys_unavailable_}};
  }
  c.min_duration_ns = static_cast<std::int64_t>(cfg_.min_duration_us) * 1000;
  // Steps are cut to the data: a cycle's or a window's. Where older steps
  // were let go and the data begins before the oldest kept, it says from
  // when its steps are complete.
  if (d.steps_not_kept > 0 && !d.steps.empty() && d.steps.front().start_ns > d.start_ns) {
    d.collection["steps_from_ns"] = d.steps.front().start_ns;
  }
  // A step no longer than a counter tick is kept where it lies in the data:
  // a coarse counter reads the same for two step() calls close together.
  std::vector<step_span> kept;
  for (step_span s : d.steps) {
    const bool within = s.start_ns == s.end_ns ? d.start_ns <= s.start_ns && s.start_ns <= end_ns
                                               : d.start_ns < s.end_ns && s.start_ns < end_ns;
    s.start_ns = std::max(s.start_ns, d.start_ns);
    s.end_ns = std::min(s.end_ns, end_ns);
    if (within) kept.push_back(s);
  }
  d.steps = std::move(kept);
}

// Ends the current step at `now_ns` (under the control lock): it is kept,
// with the latest max_kept_steps, for the traces to come.
inline void detail::session_core::end_step(std::uint64_t now_ticks) {
  run_.steps.push_back({steps_.step(), run_.step_began, now_ticks});
  if (run_.steps.size() > max_kept_steps) {
    run_.steps.pop_front();
    ++run_.steps_let_go;
  }
  run_.step_began = now_ticks;
  run_.stepped = true;
}

// The steps kept, and with `with_current` the one in progress, ending at
// `end` (under the control lock), in the nanoseconds of the data that ends
// there. None until step() was called.
inline std::vector<step_span> detail::session_core::steps_so_far(bool with_current, clock_point end) const {
  const clock_calibration clock(detail::state().origin, end);
  std::vector<step_span> out;
  out.reserve(run_.steps.size() + 1);
  for (const auto& s : run_.steps) out.push_back({s.id, clock.to_ns(s.begin), clock.to_ns(s.end)});
  if (with_current && run_.stepped) out.push_back({steps_.step(), clock.to_ns(run_.step_began), end.steady});
  return out;
}

NPUPROF_ABI_END
}  // namespace npuprof
