// The `acl` backend: ties stream markers to device events of the Ascend
// runtime, resolves their device times on the session's background thread,
// and maps them onto the host clock.
#pragma once

#include "../marker/abi.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "../clock.hpp"
#include "../marker/diagnostics.hpp"
#include "../engine/device_times.hpp"
#include "../marker/platform.hpp"
#include "../marker/prefetch.hpp"
#include "acl_runtime.hpp"
#include "device_backend.hpp"
#include "event_pool.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

class acl_backend final : public device_backend {
 public:
  /// The backend for the runtime at `path` (empty: the default search),
  /// loaded once per process and never unloaded; null with `why` on failure.
  static acl_backend* open(const std::string& path, std::string& why);

  std::uint64_t record(void* stream) noexcept override {
    if (degraded_.load(std::memory_order_relaxed)) return no_device_event;
    event_pool* p = t_last_pool.pool;
    if (NPUPROF_UNLIKELY(t_last_pool.stream != stream || t_last_pool.backend != this)) {
      p = ready_pool(stream);
      if (p == nullptr) return no_device_event;
    }
    const std::uint64_t seq = p->take();
    if (NPUPROF_UNLIKELY(seq == no_device_event)) return bump(pool_empty_);
    if (prefetch_) p->prefetch_ahead(seq);
    const int err = rt_.record_event(p->event(seq), stream);
    p->publish(seq, err == 0);
    if (NPUPROF_UNLIKELY(err != 0)) {
      degrade("aclrtRecordEvent", err);
      return no_device_event;
    }
    return seq;
  }

  /// Starts a session: resets the counts and takes the first clock reference.
  void begin_session(std::uint32_t events_per_stream) override {
    events_per_stream_.store(events_per_stream, std::memory_order_relaxed);
    times_.clear();
    clock_ = device_clock_map();
    latest_ref_ = -1;
    pending_ref_ = -1;
    degraded_error_.store(0);
    degraded_function_.store(nullptr);
    degraded_reported_ = false;
    for (auto* c : {&no_pool_, &pool_empty_, &untimed_}) c->store(0);
    refused_reported_ = false;
    failed_ = query_errors_ = resolved_ = 0;
    session_start_issued_.clear();
    pools_.for_each_ready([&](event_pool& p) { session_start_issued_[p.stream.load()] = p.issued(); });
    degraded_.store(false, std::memory_order_release);
    use_timestamp_ = rt_.event_get_timestamp != nullptr;  // probed again by the first reference
    take_reference(true);
  }

  /// Reads the times of the events the device has passed and frees their
  /// slots; takes a clock reference now and then. Background thread only.
  void resolve() override {
    report_degraded();
    report_refused();
    take_reference(false);
    pools_.for_each_ready([&](event_pool& p) { resolve_pool(p); });
  }

  /// Ends a session: waits (at most `wait`) for the events in flight, takes a
  /// last clock reference and hands over the session's device times.
  device_times finish(std::chrono::milliseconds wait) override {
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
      resolve();
      bool done = true;
      pools_.for_each_ready([&](event_pool& p) { done = done && p.resolved() == p.issued(); });
      if (done || std::chrono::steady_clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    take_reference(true);
    device_times out;
    for (auto& [stream, t] : times_) out.streams[reinterpret_cast<std::uintptr_t>(stream)] = std::move(t);
    times_.clear();
    clock_.seal();
    out.clock = clock_;
    return out;
  }

  /// The device times resolved so far, copied, without waiting or ending
  /// anything: what a dump of a running session shows.
  device_times snapshot() override {
    resolve();
    device_times out;
    for (auto& [stream, t] : times_) out.streams[reinterpret_cast<std::uintptr_t>(stream)] = t;
    out.clock = clock_;
    out.clock.seal();
    return out;
  }

  bool device_ns(std::uint64_t stream, std::uint64_t seq, std::int64_t& out) const override {
    auto it = times_.find(reinterpret_cast<void*>(static_cast<std::uintptr_t>(stream)));
    if (it == times_.end() || seq < it->second.base) return false;
    const std::uint64_t i = seq - it->second.base;
    if (i >= it->second.device_ns.size() || it->second.device_ns[i] == device_times::unknown) return false;
    out = it->second.device_ns[i];
    return true;
  }

  /// Forgets the times of events that ran before host time `from_ns`: a
  /// flight recorder keeps only its window.
  void forget_before(std::int64_t from_ns) override {
    for (auto& [stream, t] : times_) {
      std::size_t n = 0;
      while (n < t.device_ns.size() &&
             (t.device_ns[n] == device_times::unknown || clock_.to_host(t.device_ns[n]) < from_ns)) {
        ++n;
      }
      if (n < 1024 && n * 4 < t.device_ns.size()) continue;  // erase in batches
      t.device_ns.erase(t.device_ns.begin(), t.device_ns.begin() + static_cast<std::ptrdiff_t>(n));
      t.base += n;
    }
    clock_.forget_before(from_ns);
  }

  /// What the metadata says about this backend and the session's device events.
  nlohmann::json describe() const override {
    std::uint64_t issued = 0, in_flight = 0, streams = 0;
    pools_.for_each_ready([&](const event_pool& p) {
      auto it = session_start_issued_.find(p.stream.load());
      issued += p.issued() - (it != session_start_issued_.end() ? it->second : 0);
      in_flight += p.issued() - p.resolved();
      ++streams;
    });
    const int err = degraded_error_.load();
    return {{"name", "acl"},
            {"library", rt_.path},
            {"simulated", rt_.simulated},
            {"device", device_id_},
            {"timestamps", use_timestamp_ ? "aclrtEventGetTimestamp" : "aclrtEventElapsedTime"},
            {"events_per_stream", events_per_stream_.load()},
            {"streams", streams},
            {"device_events",
             {{"taken", issued},
              {"resolved", resolved_},
              {"failed", failed_},
              {"query_errors", query_errors_},
              {"in_flight_at_stop", in_flight},
              {"dropped_pool_empty", pool_empty_.load()},
              {"dropped_no_pool", no_pool_.load()},
              {"dropped_untimed_stream", untimed_.load()}}},
            {"untimed_streams", refused_streams_.load()},
            {"clock", {{"references", clock_.size()}, {"host_ns_per_device_ns", clock_.rate()}}},
            {"degraded", err == 0 ? nlohmann::json(nullptr) : nlohmann::json(degraded_text())}};
  }

  bool simulated() const noexcept override { return rt_.simulated; }
  std::int32_t device() const noexcept override { return device_id_; }
  std::string device_name() const override {
    const char* name = rt_.get_soc_name != nullptr ? rt_.get_soc_name() : nullptr;
    return name != nullptr ? std::string(name) : std::string();
  }
  const std::string& library() const noexcept { return rt_.path; }

 private:
  static constexpr int reference_slots = 3;
  static constexpr std::int64_t reference_every_ns = 200'000'000;

  // The ready pool this thread recorded on last: a thread usually records
  // on one stream many times in a row, and a ready pool stays ready and in
  // place for the life of the process, so the table is searched only when
  // the stream changes. initial-exec, as the thread's buffer: one load also
  // inside shared objects.
  struct last_pool {
    const acl_backend* backend;
    void* stream;
    event_pool* pool;
  };
  __attribute__((tls_model("initial-exec"))) static inline thread_local last_pool t_last_pool{};

  NPUPROF_COLD event_pool* ready_pool(void* stream) noexcept {
    event_pool* p = pools_.find_or_claim(stream);
    if (p == nullptr) {
      bump(no_pool_);
      return nullptr;
    }
    if (p->status.load(std::memory_order_acquire) != event_pool::state::ready && !make_ready(*p)) {
      bump(p->status.load(std::memory_order_acquire) == event_pool::state::refused ? untimed_ : no_pool_);
      return nullptr;
    }
    t_last_pool = {this, stream, p};
    return p;
  }

  // Out of line: once per stream, on the first thread that ties a marker to
  // it; others that come meanwhile record host-only until the pool is ready.
  // The stream is checked by recording one event on it: a handle the runtime
  // refuses (not one of its streams) is never timed, and never used again.
  NPUPROF_COLD bool make_ready(event_pool& p) noexcept {
    auto st = p.status.load(std::memory_order_acquire);
    auto empty = event_pool::state::empty;
    if (st == empty && p.status.compare_exchange_strong(empty, event_pool::state::creating)) {
      void* stream = p.stream.load(std::memory_order_acquire);
      if (const int err = p.create(rt_, events_per_stream_.load(std::memory_order_relaxed), ownable_, stream, true)) {
        refused_streams_.fetch_add(1, std::memory_order_relaxed);
        last_refused_error_.store(err);
        last_refused_.store(stream);  // the latest: what the next report names
      }
      st = p.status.load(std::memory_order_acquire);
    }
    return st == event_pool::state::ready;
  }

  std::uint64_t bump(std::atomic<std::uint64_t>& c) noexcept {
    c.fetch_add(1, std::memory_order_relaxed);
    return no_device_event;
  }

  // A runtime call failed on a recording thread: device timing stops for this
  // session (markers stay host-only) and the background thread reports it.
  void degrade(const char* function, int err) noexcept {
    const char* none = nullptr;
    if (degraded_function_.compare_exchange_strong(none, function)) degraded_error_.store(err);
    degraded_.store(true, std::memory_order_release);
  }

  std::string degraded_text() const {
    const char* f = degraded_function_.load();
    return std::string(f != nullptr ? f : "a runtime call") + " failed with error " +
           std::to_string(degraded_error_.load()) +
           "; device timing is off for the rest of the session, markers are recorded host-only";
  }

  void report_refused() {
    if (refused_reported_ || last_refused_.load() == nullptr || untimed_.load() == 0) return;
    refused_reported_ = true;
    char stream[32];
    std::snprintf(stream, sizeof stream, "%p", last_refused_.load());
    say("stream %s is not a stream of the runtime (aclrtRecordEvent failed with error %d); markers on it are "
        "recorded host-only",
        stream, last_refused_error_.load());
  }

  void report_degraded() {
    if (degraded_reported_ || degraded_error_.load() == 0) return;
    degraded_reported_ = true;
    say("%s", degraded_text().c_str());
  }

  // The device time of a completed event, read with aclrtEventGetTimestamp.
  std::int64_t timestamp_ns(void* event) const {
    std::uint64_t us = 0;
    if (rt_.event_get_timestamp(event, &us) != 0) return device_times::unknown;
    return static_cast<std::int64_t>(us) * 1000;
  }

  // The device time of a completed event, as elapsed time since the latest
  // reference event.
  std::int64_t since_reference_ns(void* event) const {
    float ms = 0;
    if (latest_ref_ < 0 || rt_.event_elapsed_time(&ms, ref_events_[latest_ref_], event) != 0) {
      return device_times::unknown;
    }
    return latest_ref_device_ns_ + static_cast<std::int64_t>(static_cast<double>(ms) * 1e6);
  }

  std::int64_t event_device_ns(void* event) const {
    return use_timestamp_ ? timestamp_ns(event) : since_reference_ns(event);
  }

  void resolve_pool(event_pool& p) {
    void* stream = p.stream.load(std::memory_order_acquire);
    const std::uint64_t issued = p.issued();
    std::uint64_t seq = p.resolved();
    for (; seq != issued; ++seq) {
      bool failed = false;
      if (!p.is_published(seq, failed)) break;  // its thread is still recording it
      void* event = p.event(seq);
      std::int64_t t = device_times::unknown;
      if (failed) {
        ++failed_;
      } else {
        int status = 0;
        if (rt_.query_event_status(event, &status) != 0) {
          ++query_errors_;
        } else if (status != acl_runtime::status_complete) {
          break;  // the device has not reached it yet; nor the later ones
        } else {
          t = event_device_ns(event);
          if (t != device_times::unknown) ++resolved_;
        }
      }
      auto [it, fresh] = times_.try_emplace(stream);
      if (fresh) it->second.base = seq;
      it->second.device_ns.push_back(t);
    }
    p.release_before(seq);
  }

  // Clock references are events on a private, idle stream: each completes as
  // soon as it is recorded, so its device time pairs with the host time of
  // the call. Synchronous references (session start and end) take the
  // tightest of a few tries.
  void take_reference(bool wait) {
    if (ref_stream_ == nullptr) return;
    if (pending_ref_ >= 0) {
      if (wait) rt_.synchronize_event(ref_events_[pending_ref_]);
      int status = 0;
      if (rt_.query_event_status(ref_events_[pending_ref_], &status) != 0) {
        pending_ref_ = -1;
      } else if (status == acl_runtime::status_complete) {
        complete_reference();
      } else if (!wait) {
        return;
      }
    }
    if (!wait) {
      if (latest_ref_ < 0 || steady_ns() - last_ref_host_ns_ >= reference_every_ns) record_reference();
      return;
    }
    for (int i = 0; i < 5; ++i) {
      if (!record_reference()) return;
      const std::int64_t window = pending_ref_window_ns_;
      rt_.synchronize_event(ref_events_[pending_ref_]);
      complete_reference();  // the map keeps the tightest of close pairs
      if (window <= 2'000) break;
    }
  }

  bool record_reference() {
    const int slot = (latest_ref_ + 1) % reference_slots;
    const std::int64_t before = steady_ns();
    if (rt_.record_event(ref_events_[slot], ref_stream_) != 0) return false;
    const std::int64_t after = steady_ns();
    pending_ref_ = slot;
    pending_ref_host_ns_ = before + (after - before) / 2;
    pending_ref_window_ns_ = after - before;
    last_ref_host_ns_ = after;
    return true;
  }

  void complete_reference() {
    void* ev = ref_events_[pending_ref_];
    std::int64_t dev = device_times::unknown;
    if (use_timestamp_) {
      dev = timestamp_ns(ev);
      // Not supported on this device: elapsed times from here on.
      if (dev == device_times::unknown && clock_.size() == 0) use_timestamp_ = false;
    }
    if (!use_timestamp_) {
      dev = latest_ref_ < 0 ? 0 : since_reference_ns(ev);  // the first reference is the origin
    }
    if (dev != device_times::unknown) {
      clock_.add(pending_ref_host_ns_, dev, pending_ref_window_ns_);
      latest_ref_ = pending_ref_;
      latest_ref_device_ns_ = dev;
    }
    pending_ref_ = -1;
  }

  bool init(std::string& why) {
    if (int e = rt_.get_device(&device_id_); e != 0) {
      why = "aclrtGetDevice failed with error " + std::to_string(e) + " (is a device set for this process?)";
      return false;
    }
    if (int e = rt_.create_stream(&ref_stream_); e != 0) {
      why = "aclrtCreateStream failed with error " + std::to_string(e);
      return false;
    }
    for (void*& ev : ref_events_) {
      if (int e = rt_.create_event_with_flag(&ev, acl_runtime::event_time_line); e != 0) {
        why = "aclrtCreateEventWithFlag failed with error " + std::to_string(e);
        return false;
      }
    }
    use_timestamp_ = rt_.event_get_timestamp != nullptr;
    return true;
  }

  acl_runtime rt_;
  const bool prefetch_ = can_prefetch_for_write();
  const bool ownable_ = asymmetric_fence_available();  // pools owned by one thread until shared
  std::int32_t device_id_ = 0;
  event_pools pools_;
  std::atomic<std::uint32_t> events_per_stream_{256};
  std::atomic<bool> degraded_{false};
  std::atomic<int> degraded_error_{0};
  std::atomic<const char*> degraded_function_{nullptr};
  std::atomic<std::uint64_t> no_pool_{0};
  std::atomic<std::uint64_t> pool_empty_{0};
  std::atomic<std::uint64_t> untimed_{0};          // markers on refused streams, this session
  std::atomic<std::uint64_t> refused_streams_{0};  // handles the runtime refused, ever
  std::atomic<void*> last_refused_{nullptr};
  std::atomic<int> last_refused_error_{0};

  // Background thread only.
  bool degraded_reported_ = false;
  bool refused_reported_ = false;
  std::uint64_t failed_ = 0, query_errors_ = 0, resolved_ = 0;
  std::unordered_map<void*, device_times::stream_times> times_;
  std::unordered_map<void*, std::uint64_t> session_start_issued_;
  device_clock_map clock_;
  bool use_timestamp_ = true;
  void* ref_stream_ = nullptr;
  std::array<void*, reference_slots> ref_events_{};
  int latest_ref_ = -1;
  int pending_ref_ = -1;
  std::int64_t latest_ref_device_ns_ = 0;
  std::int64_t pending_ref_host_ns_ = 0;
  std::int64_t pending_ref_window_ns_ = 0;
  std::int64_t last_ref_host_ns_ = 0;
};

/// One backend per runtime library, for the life of the process.
NPUPROF_PROCESS_WIDE inline acl_backend* acl_backend::open(const std::string& path, std::string& why) {
  static std::mutex mutex;
  static auto* loaded = new std::map<std::string, acl_backend*>();
  std::lock_guard<std::mutex> lock(mutex);
  const std::string key = path.empty() ? acl_runtime::default_path() : path;
  if (auto it = loaded->find(key); it != loaded->end()) return it->second;
  auto b = std::make_unique<acl_backend>();
  if (!b->rt_.load(key, why) || !b->init(why)) return nullptr;
  return (*loaded)[key] = b.release();
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
