// The session: the one place recording is switched on, drained and written.
#pragma once

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "backend/backend.hpp"
#include "buffer.hpp"
#include "clock.hpp"
#include "config.hpp"
#include "detail/decode.hpp"
#include "detail/state.hpp"
#include "error.hpp"
#include "export/file.hpp"
#include "export/metadata.hpp"
#include "export/output_dir.hpp"
#include "export/summary.hpp"
#include "export/trace_view.hpp"
#include "trace_data.hpp"

namespace npuprof {

/// Records markers between start() and stop(), then writes an output
/// directory with trace_view.json and profiler_metadata.json. One session can
/// run at a time in a process; one still running when the process exits is
/// stopped and written then.
///
///     npuprof::session s{npuprof::config::from_env()};
///     s.start();
///     ...
///     std::filesystem::path dir = s.stop();
class session {
 public:
  explicit session(config cfg = config::from_env()) : cfg_(std::move(cfg)) { cfg_.validate(); }

  ~session() {
    if (!running()) return;
    try {
      stop();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
    }
  }

  session(const session&) = delete;
  session& operator=(const session&) = delete;

  /// Starts recording. Throws npuprof::error when this or another session is
  /// already running.
  void start();

  /// Stops recording and writes the output directory under the configured
  /// output_dir. Returns its path. Throws npuprof::error when it cannot be
  /// written; the data is kept, and write_to() can write it elsewhere.
  std::filesystem::path stop();

  /// Stops recording and throws away what was recorded, writing nothing.
  void cancel();

  /// Throws away what was recorded so far and goes on recording.
  void clear();

  /// Writes the data of the last stop() into a new output directory under
  /// `parent` and returns its path.
  std::filesystem::path write_to(const std::string& parent);

  bool running() const noexcept { return running_.load(std::memory_order_acquire); }
  const config& configuration() const noexcept { return cfg_; }
  /// The directory the last stop() or write_to() wrote.
  const std::filesystem::path& output_path() const noexcept { return output_; }
  /// The data collected by the last stop().
  const trace_data& data() const noexcept { return *data_; }
  /// This session's trace id, written to the metadata: from
  /// config::trace_id_callback, else generated.
  const std::string& trace_id() const noexcept { return trace_id_; }

  /// Adds `key: value` to the "user" section of profiler_metadata.json (the
  /// model, the build, the request mix...). A later value for a key wins.
  void add_metadata(const std::string& key, nlohmann::json value) { user_metadata_[key] = std::move(value); }

 private:
  void halt();
  void recycle_segments();
  void drain_loop();
  void drain_full_chunks();
  void collect_live_chunks();
  void discard_stale_records();
  std::shared_ptr<trace_data> collect(clock_point end);

  config cfg_;
  std::vector<detail::segment> segments_;
  std::deque<std::vector<std::uint64_t>> copies_;  // records of chunks given back early
  std::thread drainer_;
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_requested_ = false;
  std::atomic<bool> running_{false};
  clock_point start_point_{};
  std::int64_t wall_start_ = 0;
  detail::acl_backend* device_ = nullptr;  // null: host only
  nlohmann::json backend_note_;
  detail::device_times device_times_;
  std::shared_ptr<trace_data> data_ = std::make_shared<trace_data>();
  std::filesystem::path output_;
  std::string trace_id_;
  nlohmann::json user_metadata_ = nlohmann::json::object();
};

namespace detail {

inline void stop_active_session_at_exit() {
  session* s = state().active.load(std::memory_order_acquire);
  if (s == nullptr || !s->running()) return;
  try {
    const auto dir = s->stop();
    std::fprintf(stderr, "npuprof: session still running at exit: stopped, trace written to %s\n",
                 dir.string().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
  }
}

inline std::string new_trace_id() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
                      static_cast<std::uint64_t>(wall_ns()));
  return fmt::format("{:016x}{:016x}", gen(), gen());
}

inline std::string process_name() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name.empty() ? std::string("process") : name;
}

}  // namespace detail

inline void session::start() {
  detail::process_state& st = detail::state();
  std::lock_guard<std::recursive_mutex> lock(st.control);
  if (running()) throw error("npuprof: cannot start the session: it is already running");
  if (st.active.load(std::memory_order_acquire) != nullptr) {
    throw error("npuprof: cannot start a session: another session is already running in this process; "
                "stop it first");
  }
  st.pool.configure(cfg_.chunk_size_kb * 1024, cfg_.buffer_size_kb * 1024);
  discard_stale_records();
  st.pool.top_up();
  trace_id_ = cfg_.trace_id_callback ? cfg_.trace_id_callback() : std::string();
  if (trace_id_.empty()) trace_id_ = detail::new_trace_id();
  start_point_ = sample_clock();
  wall_start_ = wall_ns() - (steady_ns() - start_point_.steady);

  st.domains.set_filter({cfg_.mstx, cfg_.domain_include, cfg_.domain_exclude});
  detail::backend_choice backend = detail::choose_backend(cfg_);
  device_ = backend.device;
  backend_note_ = std::move(backend.note);
  if (backend.forwarder != nullptr) {
    st.forwarder.store(backend.forwarder, std::memory_order_release);
    st.domains.set_forwarding(true);
  }
  if (device_ != nullptr) {
    device_->begin_session(cfg_.device_events_per_stream);
    st.device.store(device_, std::memory_order_release);
  }
  st.active.store(this, std::memory_order_release);
  running_.store(true, std::memory_order_release);
  st.domains.set_recording(true);

  stop_requested_ = false;
  drainer_ = std::thread([this] { drain_loop(); });
  if (!st.exit_hook_installed) {
    st.exit_hook_installed = true;
    std::atexit(&detail::stop_active_session_at_exit);
  }
}

// Switches recording off, stops the drainer and takes every published record.
inline void session::halt() {
  detail::process_state& st = detail::state();
  {
    std::lock_guard<std::recursive_mutex> lock(st.control);
    if (!running()) throw error("npuprof: cannot stop the session: it is not running");
    st.domains.set_recording(false);
    st.domains.set_forwarding(false);
  }
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  if (drainer_.joinable()) drainer_.join();
  std::lock_guard<std::recursive_mutex> lock(st.control);
  if (device_ != nullptr) {
    // Ranges that began recorded still end on the device: stop after them.
    st.device.store(nullptr, std::memory_order_release);
    device_times_ = device_->finish(std::chrono::milliseconds(cfg_.device_wait_ms));
  }
  drain_full_chunks();
  collect_live_chunks();
  drain_full_chunks();  // chunks handed over while we looked
}

inline void session::recycle_segments() {
  for (const detail::segment& s : segments_) {
    if (s.owned) detail::state().pool.recycle(s.source);
  }
  segments_.clear();
  copies_.clear();
}

inline std::filesystem::path session::stop() {
  halt();
  {
    std::lock_guard<std::recursive_mutex> lock(detail::state().control);
    data_ = collect(sample_clock());
    recycle_segments();
    running_.store(false, std::memory_order_release);
    detail::state().active.store(nullptr, std::memory_order_release);
  }
  return write_to(cfg_.output_dir);
}

inline void session::cancel() {
  halt();
  std::lock_guard<std::recursive_mutex> lock(detail::state().control);
  recycle_segments();
  running_.store(false, std::memory_order_release);
  detail::state().active.store(nullptr, std::memory_order_release);
}

inline void session::clear() {
  std::lock_guard<std::recursive_mutex> lock(detail::state().control);
  drain_full_chunks();
  recycle_segments();
  discard_stale_records();
}

inline std::filesystem::path session::write_to(const std::string& parent) {
  std::string worker = cfg_.worker_name.empty() ? data_->hostname : cfg_.worker_name;
  if (cfg_.worker_name.empty() && cfg_.rank >= 0) worker += "_rank" + std::to_string(cfg_.rank);
  const auto dir = detail::make_output_dir(parent, worker, data_->pid, data_->wall_start_ns);
  detail::write_trace_view(*data_, (dir / "trace_view.json").string());
  detail::write_file((dir / "profiler_metadata.json").string(),
                     detail::render_metadata(*data_, trace_id_, user_metadata_).dump(2) + "\n");
  detail::write_file((dir / "range_summary.csv").string(), detail::render_summary(*data_));
  output_ = dir;
  return dir;
}

inline void session::drain_loop() {
  std::unique_lock<std::mutex> lock(wake_mutex_);
  while (!stop_requested_) {
    wake_.wait_for(lock, std::chrono::milliseconds(cfg_.flush_interval_ms));
    if (stop_requested_) break;
    lock.unlock();
    {
      std::lock_guard<std::recursive_mutex> control(detail::state().control);
      drain_full_chunks();
      detail::state().pool.top_up();
      if (device_ != nullptr) device_->resolve();
    }
    lock.lock();
  }
}

// Full chunks become the session's. A chunk that is mostly empty (its thread
// exited early) is copied and goes straight back to the pool, so that threads
// that come and go do not use up the free chunks.
inline void session::drain_full_chunks() {
  detail::process_state& st = detail::state();
  while (detail::chunk* c = st.pool.take_full()) {
    std::uint64_t* end = c->published.load(std::memory_order_acquire);
    const auto used = static_cast<std::size_t>(end - c->unread);
    if (used * 4 < static_cast<std::size_t>(c->limit - c->data())) {
      const std::vector<std::uint64_t>& copy = copies_.emplace_back(c->unread, end);
      segments_.push_back({nullptr, copy.data(), copy.data() + copy.size(), c->tid, false});
      st.pool.recycle(c);
      continue;
    }
    segments_.push_back({c, c->unread, end, c->tid, true});
    c->unread = end;
  }
}

// Chunks still owned by live threads: take what they have published so far.
inline void session::collect_live_chunks() {
  detail::state().threads.for_each_live([&](detail::thread_buffer& tb) {
    detail::chunk* c = tb.current.load(std::memory_order_acquire);
    if (c == nullptr) return;
    std::uint64_t* end = c->published.load(std::memory_order_acquire);
    if (end > c->unread) segments_.push_back({c, c->unread, end, c->tid, false});
    c->unread = end;
  });
}

// Records written after the previous session stopped belong to no session.
inline void session::discard_stale_records() {
  detail::process_state& st = detail::state();
  while (detail::chunk* c = st.pool.take_full()) st.pool.recycle(c);
  st.threads.for_each_live([](detail::thread_buffer& tb) {
    if (detail::chunk* c = tb.current.load(std::memory_order_acquire)) {
      c->unread = c->published.load(std::memory_order_acquire);
    }
  });
  st.threads.take_drops();
  st.stats.truncated_messages.exchange(0);
  st.stats.null_messages.exchange(0);
  st.stats.unregistered_drops.exchange(0);
}

inline std::shared_ptr<trace_data> session::collect(clock_point end) {
  detail::process_state& st = detail::state();
  auto d = std::make_shared<trace_data>();
  d->clock = clock_calibration(st.origin, end);
  d->start_ns = start_point_.steady;
  d->end_ns = end.steady;
  d->wall_start_ns = wall_start_;
  d->pid = static_cast<std::uint32_t>(::getpid());
  d->process_name = detail::process_name();
  d->hostname = detail::host_name();
  d->config = cfg_.to_json();
  d->domains = st.domains.names();
  d->thread_names = st.threads.names();
  for (auto& [stream, name] : st.streams.all()) d->stream_names[reinterpret_cast<std::uintptr_t>(stream)] = name;

  std::size_t words = 0;
  for (const detail::segment& s : segments_) words += static_cast<std::size_t>(s.to - s.from);
  d->events.reserve(words / 3);  // no record is smaller than 2 words; most are 3
  if (device_ != nullptr) {
    d->backend = device_->describe();
    if (backend_note_.contains("mstx_forward")) d->backend["mstx_forward"] = backend_note_["mstx_forward"];
    d->device_id = device_->device();
    d->device_simulated = device_->simulated();
  } else {
    d->backend = backend_note_;
  }
  detail::decoder dec(*d, start_point_.ticks, device_ != nullptr ? &device_times_ : nullptr);
  for (const detail::segment& s : segments_) dec.add(s);
  dec.finish(end.ticks);

  d->counts.dropped_by_thread = st.threads.take_drops();
  for (auto& [tid, n] : d->counts.dropped_by_thread) d->counts.dropped += n;
  d->counts.dropped += st.stats.unregistered_drops.exchange(0);
  d->counts.truncated_messages = st.stats.truncated_messages.exchange(0);
  d->counts.null_messages = st.stats.null_messages.exchange(0);
  d->counts.rejected_domain_names = st.stats.rejected_domain_names.load();
  device_times_ = detail::device_times();
  return d;
}

}  // namespace npuprof
