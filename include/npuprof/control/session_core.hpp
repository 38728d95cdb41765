// The session's core: what a running session owns and the order of its
// steps (start, flush, step, dump, stop). The parts do the work: the records
// it holds (drained_records.hpp), its steps (step_log.hpp), a flight
// recorder's window and signal dumps (flight_window.hpp), live metrics
// (metrics_feed.hpp), what a trace says of itself (trace_header.hpp) and where
// traces go (trace_output.hpp). npuprof::session is its handle; this header is
// compiled only where the implementation is (see <npuprof/session.hpp>).
#pragma once

#include "../marker/abi.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "../backend/backend.hpp"
#include "../clock.hpp"
#include "../engine/chunk_pool.hpp"
#include "../engine/collected.hpp"
#include "../engine/drainer.hpp"
#include "../engine/dump_signal.hpp"
#include "../engine/host_sys.hpp"
#include "../engine/process_hooks.hpp"
#include "../engine/schedule_driver.hpp"
#include "../engine/state.hpp"
#include "../error.hpp"
#include "../marker/diagnostics.hpp"
#include "../schedule.hpp"
#include "../trace_data.hpp"
#include "config_keys.hpp"
#include "drained_records.hpp"
#include "flight_window.hpp"
#include "metrics_feed.hpp"
#include "step_log.hpp"
#include "trace_header.hpp"
#include "trace_output.hpp"

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
  // What each call promises is said in <npuprof/session.hpp>.
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
    // thread, detached then, clears busy() as the last thing it does.
    while (users_.load(std::memory_order_acquire) != 0 || dumper_.busy()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  session_core(const session_core&) = delete;
  session_core& operator=(const session_core&) = delete;
  void start();
  std::filesystem::path stop();
  void cancel();
  void clear();
  void step();
  std::filesystem::path dump(const std::string& reason = "requested");
  std::filesystem::path write_to(const std::string& parent) { return output_.write_to(parent); }
  bool running() const noexcept { return running_.load(std::memory_order_acquire); }
  const config& configuration() const noexcept { return cfg_; }
  std::filesystem::path output_path() const { return output_.last(); }
  const trace_data& data() const { return output_.data(); }
  const std::string& trace_id() const noexcept { return trace_id_; }
  long current_step() const noexcept { return steps_.step(); }
  step_action current_action() const noexcept { return steps_.action(); }
  void add_metadata(const std::string& key, const nlohmann::json& value) {
    std::lock_guard<detail::recursive_mutex> lock(detail::state().control);  // a dump may be copying them
    user_metadata_[key] = value;
  }
  std::string metrics_address() const { return metrics_.address(); }

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
  void wait_for_cycle_writes();
  void retire_dumper();
  void trim_window();
  void flush();
  void stop_metrics();
  void start_signal_dump();
  void reset_counts();
  void discard_stale_records();
  std::shared_ptr<detail::collected> collect(clock_point from, clock_point end, const detail::device_times* device,
                                             bool take_counts, std::uint64_t open_scoped);
  void finish_collection(detail::collected& c, std::int64_t end_ns, detail::eviction evicted);

  config cfg_;
  detail::trace_output output_{cfg_};
  detail::drained_records records_;  // guarded by control
  detail::drainer drainer_;
  detail::metrics_feed metrics_;
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
    // Drops counted into earlier cycles or cleared, for live metrics (guarded by control).
    std::uint64_t drops_taken = 0;
  };
  run_state run_;
  detail::step_log step_log_;      // guarded by control; restarted by start()
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
  // Schedule cycles being written by step(), outside the locks; and of
  // them, those this thread writes.
  std::atomic<int> cycle_writes_{0};
  static inline thread_local int writing_here = 0;
  detail::signal_dumper dumper_;  // guarded by control
  bool parents_copy_ = false;     // this process is a fork() child of the one running it
  std::mutex host_sys_mutex_;
  std::vector<std::string> host_sys_unavailable_;  // guarded by host_sys_mutex_
  detail::dump_signal signal_;
  detail::device_backend* device_ = nullptr;  // null: host only
  nlohmann::json backend_note_;
  detail::device_times device_times_;
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
    s->wait_for_cycle_writes();  // begun before the stop: no cycle begins after it
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

}  // namespace detail

inline void detail::session_core::start() {
  for (const std::string& type : cfg_.export_type) {
    if (detail::writer_of(type) == nullptr) {
      const std::size_t i = detail::export_format_index(type);
      throw config_error("export_type \"" + type +
                         "\" needs its writer: " + std::string(detail::export_formats()[i].needs));
    }
  }
  detail::metrics_feed::check_available(cfg_.metrics);
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
  detail::metrics_feed::opened metrics = detail::metrics_feed::open(cfg_.metrics);
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
  step_log_.restart(run_.start_point.ticks);
  steps_ = detail::schedule_driver(cfg_.schedule);
  records_.reset_eviction();
  metrics_.attach(std::move(metrics), run_.start_point.ticks,
                  clock_calibration(st.origin, run_.start_point).ns_per_tick());
  records_.meter_with(metrics_.get());

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
    dumper = dumper_.retire();
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
  metrics_.abandon_in_child();
  records_.meter_with(nullptr);
  dumper_.abandon_in_child();
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
      c->header.steps = step_log_.spans(true, steps_.step(), end);
      c->header.steps_not_kept = step_log_.let_go();
      if (steps_.scheduled()) c->header.collection = steps_.cycle_note(true);
      if (!steps_.scheduled()) c->header.collection["reason"] = run_.stop_reason;  // stop, exit, terminate, ...
      finish_collection(*c, end.steady, records_.evicted());
      output_.keep(c);
      written = std::move(c);
    }
    device_times_ = detail::device_times();
    records_.recycle_all();
    running_.store(false, std::memory_order_release);
    detail::state().active.store(nullptr, std::memory_order_release);
  }
  if (!written) return output_path();
  return output_.deliver(*written);
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
    step_log_.end(steps_.step(), raw_ticks());
    steps_.advance();
    return;
  }
  std::shared_ptr<detail::collected> cycle;
  {
    std::lock_guard<std::recursive_mutex> dumping(dump_mutex_);
    detail::process_state& st = detail::state();
    std::lock_guard<detail::recursive_mutex> lock(st.control);
    if (!running()) throw error("npuprof: step(): the session is not running");
    step_log_.end(steps_.step(), raw_ticks());
    const detail::step_change change = steps_.advance();
    if (!change.resumes()) st.domains.set_recording(detail::records(change.begins));
    if (change.saves_cycle()) {
      records_.take_published();
      detail::device_times device;
      if (device_ != nullptr) device = device_->finish(std::chrono::milliseconds(cfg_.device_wait_ms));
      const clock_point end = sample_clock();
      cycle = collect(run_.cut_point, end, device_ != nullptr ? &device : nullptr, true, records_.open_scoped());
      records_.move_into(*cycle);
      cycle->header.steps = step_log_.spans(false, steps_.step(), end);
      cycle->header.steps_not_kept = step_log_.let_go();
      cycle->header.collection = steps_.cycle_note(false);
      finish_collection(*cycle, end.steady, records_.evicted());
      run_.cut_point = end;
      steps_.cycle_written();
      cycle_writes_.fetch_add(1, std::memory_order_acq_rel);  // seen by the exit handler from here
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
    struct written {
      session_core& s;
      written(session_core& core) : s(core) { ++writing_here; }
      ~written() {
        --writing_here;
        s.cycle_writes_.fetch_sub(1, std::memory_order_acq_rel);
      }
    } counted{*this};
    output_.keep(cycle);
    output_.deliver(*cycle);
  }
}

// At exit, once stopped: cycles other threads are still writing are waited
// for (ten seconds at most), else the process would end with their
// directories half written.
inline void detail::session_core::wait_for_cycle_writes() {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (cycle_writes_.load(std::memory_order_acquire) > writing_here && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

inline std::filesystem::path detail::session_core::dump(const std::string& reason) {
  refuse_in_fork_child("dump");
  std::lock_guard<std::recursive_mutex> dumping(dump_mutex_);
  detail::drained_records::snapshot taken;
  detail::device_times device;
  clock_point from{}, cut{}, end{};
  detail::eviction evicted;
  std::vector<step_span> steps;
  std::uint64_t steps_not_kept = 0;
  {
    std::lock_guard<detail::recursive_mutex> lock(detail::state().control);
    if (!running()) throw error("npuprof: cannot dump: the session is not running");
    // The dump's end is read before the buffers are: every record stamped
    // before it and published by then is in the dump, however long reading
    // them takes. Records written while they are read come too.
    cut = sample_clock();
    taken = records_.copy_published();
    if (device_ != nullptr) device = device_->snapshot();
    from = run_.cut_point;
    end = sample_clock();
    steps = step_log_.spans(true, steps_.step(), end);
    steps_not_kept = step_log_.let_go();
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
  std::shared_ptr<detail::collected> c =
      collect(from, end, device_ != nullptr ? &device : nullptr, false, taken.open_scoped);
  c->segments.assign(taken.segments.begin(), taken.segments.end());
  c->storage = std::move(taken.copies);  // the copies' records stay where the segments point
  c->header.end_ns = cut.steady;
  c->header.steps = std::move(steps);
  c->header.steps_not_kept = steps_not_kept;
  c->header.collection = {{"mode", cfg_.flight.enabled ? "flight_recorder" : "session"},
                          {"dump", ++run_.dumps},
                          {"reason", reason},
                          {"counts", "since the session started"}};
  finish_collection(*c, cut.steady, evicted);
  const std::filesystem::path dir = output_.write(*c, cfg_.output_dir);
  reading.now();
  return output_.announce(dir);
}

// Dumps the running session, if any, for npuprof::dump().
inline std::filesystem::path detail::dump_active_session(const std::string& reason) {
  const active_session active;
  if (active.get() == nullptr) throw error("npuprof: cannot dump: no session is running");
  return active.get()->dump(reason);
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
  metrics_.calibrate(run_.start_point.ticks);
  records_.drain_full();
  detail::pool().top_up();
  if (device_ != nullptr) device_->resolve();
  metrics_.feed(device_, run_.drops_taken);
  if (cfg_.flight.enabled) {
    trim_window();
    start_signal_dump();
  }
}

// The endpoint stops with the session; records taken from now on are not
// measured.
inline void detail::session_core::stop_metrics() {
  metrics_.close_endpoint();
  std::lock_guard<detail::recursive_mutex> lock(detail::state().control);
  records_.meter_with(nullptr);
  metrics_.close_metrics();
}

// A dump asked for by signal runs on a thread of its own, so that draining
// goes on meanwhile. Called with the control lock held.
inline void detail::session_core::start_signal_dump() {
  if (run_.stopping || dumper_.busy()) return;  // the flag waits
  if (!detail::dump_signal::take()) return;
  dumper_.start("signal " + detail::signal_name(cfg_.flight.signal),
                [this](const std::string& reason) { return dump(reason); });
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

inline void detail::session_core::reset_counts() { run_.drops_taken += detail::reset_losses(); }

// What a trace says about itself, and the counts of what was lost, taken
// now; the records are added by the caller. `take_counts` resets the drop
// counts (the data ends a session or a cycle); a dump only reads them.
inline std::shared_ptr<detail::collected> detail::session_core::collect(clock_point from, clock_point end,
                                                                        const detail::device_times* device,
                                                                        bool take_counts, std::uint64_t open_scoped) {
  auto c = std::make_shared<detail::collected>();
  trace_data& d = c->header;
  d.clock = clock_calibration(detail::state().origin, end);
  d.start_ns = from.steady;
  d.end_ns = end.steady;
  d.wall_start_ns = run_.wall_start + (from.steady - run_.start_point.steady);
  d.config = cfg_.to_json();
  detail::describe_process(d);
  std::lock_guard<detail::recursive_mutex> lock(detail::state().control);  // a dump collects outside it
  detail::describe_backend(d, device_, backend_note_);
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
  const std::uint64_t dropped = detail::count_losses(d, take_counts, open_scoped);
  if (take_counts) run_.drops_taken += dropped;
  return c;
}

// What every written trace goes through: a flight recorder's window, then
// the duration threshold (applied while the records are decoded).
inline void detail::session_core::finish_collection(detail::collected& c, std::int64_t end_ns,
                                                    detail::eviction evicted) {
  trace_data& d = c.header;
  if (cfg_.flight.enabled) cut_to_window(c, end_ns, evicted, cfg_.flight);
  if (!cfg_.host_sys.empty()) {
    std::lock_guard<std::mutex> note(host_sys_mutex_);
    d.collection["host_sys"] = {
        {"sources", cfg_.host_sys}, {"interval_ms", cfg_.host_sys_interval_ms}, {"unavailable", host_sys_unavailable_}};
  }
  c.min_duration_ns = static_cast<std::int64_t>(cfg_.min_duration_us) * 1000;
  cut_steps(d, end_ns);
}

NPUPROF_ABI_END
}  // namespace npuprof
