// The simulated Ascend runtime: see simulated_acl.h.
//
// A stream is a worker thread with a queue. Kernels advance the stream's own
// time cursor by their duration; an event takes the cursor's time when the
// stream reaches it. The worker sleeps until the host clock has caught up with
// the cursor before it marks an event complete, so events never complete
// early, and their timestamps are exact whatever the sleep jitter.
#include "simulated_acl.h"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#define SIM_API extern "C" __attribute__((visibility("default")))

namespace {

using host_clock = std::chrono::steady_clock;

std::int64_t host_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(host_clock::now().time_since_epoch()).count();
}

// The device clock runs 150 ppm fast and started long before the process.
constexpr double drift_ppm = 150.0;
constexpr std::uint64_t boot_offset_us = 86'400'000'000ULL;  // "booted a day ago"
const std::int64_t host_origin_ns = host_ns();

std::int64_t device_ns(std::int64_t host) {
  const double elapsed = static_cast<double>(host - host_origin_ns) * (1.0 + drift_ppm * 1e-6);
  return static_cast<std::int64_t>(boot_offset_us) * 1000 + static_cast<std::int64_t>(elapsed);
}

struct event {
  enum : int { never = 0, pending = 1, complete = 2 };
  std::atomic<int> status{never};
  std::atomic<std::uint64_t> generation{0};
  std::atomic<std::int64_t> host_time{0};  // when the stream reached it
};

struct work {
  std::int64_t kernel_ns;  // 0 for an event
  event* ev;
  std::uint64_t generation;
  std::int64_t queued_at;
};

// Like a device, a stream's worker polls its queue: submitting work (a
// kernel, an event record) never wakes a thread, so its cost on the host is a
// short lock and a queue append. An idle worker polls less and less often,
// from every 20 us up to every millisecond; whoever waits for the stream
// (synchronize, close) wakes it at once.
struct stream {
  static constexpr std::chrono::microseconds min_poll{20};
  static constexpr std::chrono::microseconds max_poll{1000};

  std::mutex mutex;
  std::condition_variable wake;
  std::condition_variable idle;
  std::deque<work> queue;
  bool busy = false;
  bool closing = false;
  std::int64_t cursor = 0;  // host time at which the stream's last work ends (worker only)
  std::thread worker;

  stream() : worker([this] { run(); }) {}

  void push(const work& w) {
    std::lock_guard<std::mutex> lock(mutex);
    queue.push_back(w);
  }

  // Takes all queued work at once: the lock is held once per batch, not once
  // per item, so submitting threads rarely find it taken.
  void run() {
    std::deque<work> batch;
    auto poll = min_poll;
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      if (queue.empty()) {
        if (closing) return;
        wake.wait_for(lock, poll);
        poll = std::min(poll * 2, max_poll);
        continue;
      }
      poll = min_poll;
      batch.swap(queue);
      busy = true;
      lock.unlock();
      for (const work& w : batch) execute(w);
      batch.clear();
      lock.lock();
      busy = false;
      if (queue.empty()) idle.notify_all();
    }
  }

  void execute(const work& w) {
    cursor = std::max(cursor, w.queued_at) + w.kernel_ns;
    const std::int64_t until = cursor;
    std::this_thread::sleep_until(host_clock::time_point(std::chrono::nanoseconds(until)));
    if (w.ev != nullptr && w.ev->generation.load(std::memory_order_acquire) == w.generation) {
      w.ev->host_time.store(until, std::memory_order_relaxed);
      w.ev->status.store(event::complete, std::memory_order_release);
    }
  }

  void synchronize() {
    std::unique_lock<std::mutex> lock(mutex);
    if (queue.empty() && !busy) return;
    wake.notify_one();
    idle.wait(lock, [&] { return queue.empty() && !busy; });
  }

  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      closing = true;
    }
    wake.notify_one();
    worker.join();
  }
};

struct failure {
  aclError error;
  int times;
};

// The streams this runtime created, found without locks: a stream handle the
// runtime does not know is refused with an error, as a device runtime does,
// never dereferenced. Insert-only (handles are never reused).
class stream_registry {
 public:
  static constexpr std::size_t slots = 1u << 14;

  void add(stream* s) {
    for (std::size_t i = 0, at = hash(s); i < slots; ++i, at = (at + 1) % slots) {
      stream* expected = nullptr;
      if (table_[at].compare_exchange_strong(expected, s)) return;
    }
  }

  bool contains(const void* s) const {
    for (std::size_t i = 0, at = hash(s); i < slots; ++i, at = (at + 1) % slots) {
      const stream* k = table_[at].load(std::memory_order_acquire);
      if (k == s) return true;
      if (k == nullptr) return false;
    }
    return false;
  }

 private:
  static std::size_t hash(const void* p) {
    return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ULL >> 50) % slots;
  }
  std::atomic<stream*> table_[slots] = {};
};

// Process-lifetime state; never destroyed, so worker threads may outlive main.
struct runtime {
  std::atomic<std::uint32_t> event_limit{65536};
  std::atomic<std::uint32_t> live_events{0};
  std::atomic<bool> timestamps{true};
  std::atomic<bool> any_failure{false};
  std::mutex failures_mutex;
  std::map<std::string, failure> failures;
  std::once_flag default_once;
  stream* default_stream = nullptr;
  std::mutex retired_mutex;
  std::vector<stream*> retired;        // destroyed streams: kept so that handles are never reused
  std::vector<event*> retired_events;  // destroyed events: kept for work still queued
  stream_registry streams;

  aclError injected(const char* function) {
    if (!any_failure.load(std::memory_order_acquire)) return ACL_SUCCESS;
    std::lock_guard<std::mutex> lock(failures_mutex);
    auto it = failures.find(function);
    if (it == failures.end()) return ACL_SUCCESS;
    const aclError e = it->second.error;
    if (--it->second.times <= 0) failures.erase(it);
    if (failures.empty()) any_failure.store(false, std::memory_order_release);
    return e;
  }

  /// The stream behind a handle (null: the default stream); null for a
  /// handle this runtime did not create.
  stream* resolve(aclrtStream s) {
    if (s != nullptr) return streams.contains(s) ? static_cast<stream*>(s) : nullptr;
    std::call_once(default_once, [&] { default_stream = new stream(); });
    return default_stream;
  }
};

runtime& rt() {
  static runtime* r = new runtime();
  return *r;
}

#define SIM_INJECT()                                            \
  do {                                                          \
    if (const aclError e_ = rt().injected(__func__)) return e_; \
  } while (0)

}  // namespace

SIM_API aclError aclrtCreateEventWithFlag(aclrtEvent* ev, uint32_t) {
  SIM_INJECT();
  if (ev == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  runtime& r = rt();
  if (r.live_events.fetch_add(1) >= r.event_limit.load()) {
    r.live_events.fetch_sub(1);
    return NPUPROF_SIM_ERROR_NO_RESOURCE;
  }
  *ev = new event();
  return ACL_SUCCESS;
}

SIM_API aclError aclrtCreateEvent(aclrtEvent* ev) { return aclrtCreateEventWithFlag(ev, ACL_EVENT_SYNC); }

SIM_API aclError aclrtDestroyEvent(aclrtEvent ev) {
  SIM_INJECT();
  if (ev == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  // Work still queued may point at it: keep the memory, as a device would.
  auto* e = static_cast<event*>(ev);
  e->generation.fetch_add(1);
  runtime& r = rt();
  r.live_events.fetch_sub(1);
  std::lock_guard<std::mutex> lock(r.retired_mutex);
  r.retired_events.push_back(e);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtRecordEvent(aclrtEvent ev, aclrtStream s) {
  SIM_INJECT();
  if (ev == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  stream* st = rt().resolve(s);
  if (st == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  auto* e = static_cast<event*>(ev);
  const std::uint64_t gen = e->generation.fetch_add(1, std::memory_order_acq_rel) + 1;
  e->status.store(event::pending, std::memory_order_release);
  st->push({0, e, gen, host_ns()});
  return ACL_SUCCESS;
}

SIM_API aclError aclrtQueryEventStatus(aclrtEvent ev, aclrtEventRecordedStatus* status) {
  SIM_INJECT();
  if (ev == nullptr || status == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  // Like a real device, an event never recorded reads as complete.
  *status = static_cast<event*>(ev)->status.load(std::memory_order_acquire) == event::pending
                ? ACL_EVENT_RECORDED_STATUS_NOT_READY
                : ACL_EVENT_RECORDED_STATUS_COMPLETE;
  return ACL_SUCCESS;
}

SIM_API aclError aclrtSynchronizeEvent(aclrtEvent ev) {
  SIM_INJECT();
  if (ev == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  while (static_cast<event*>(ev)->status.load(std::memory_order_acquire) == event::pending) {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  return ACL_SUCCESS;
}

SIM_API aclError aclrtEventElapsedTime(float* ms, aclrtEvent start, aclrtEvent end) {
  SIM_INJECT();
  if (ms == nullptr || start == nullptr || end == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  auto* a = static_cast<event*>(start);
  auto* b = static_cast<event*>(end);
  if (a->status.load(std::memory_order_acquire) != event::complete ||
      b->status.load(std::memory_order_acquire) != event::complete) {
    return NPUPROF_SIM_ERROR_NOT_READY;
  }
  const std::int64_t d = device_ns(b->host_time.load()) - device_ns(a->host_time.load());
  *ms = static_cast<float>(static_cast<double>(d) / 1e6);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtEventGetTimestamp(aclrtEvent ev, uint64_t* timestamp) {
  SIM_INJECT();
  if (!rt().timestamps.load()) return NPUPROF_SIM_ERROR_NOT_SUPPORTED;
  if (ev == nullptr || timestamp == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  auto* e = static_cast<event*>(ev);
  if (e->status.load(std::memory_order_acquire) != event::complete) return NPUPROF_SIM_ERROR_NOT_READY;
  *timestamp = static_cast<std::uint64_t>(device_ns(e->host_time.load()) / 1000);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtGetDevice(int32_t* device) {
  SIM_INJECT();
  if (device == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  *device = 0;
  return ACL_SUCCESS;
}

SIM_API const char* aclrtGetSocName(void) { return "simulated NPU (npuprof)"; }

SIM_API aclError aclrtCreateStream(aclrtStream* s) {
  SIM_INJECT();
  if (s == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  auto* st = new stream();
  rt().streams.add(st);
  *s = st;
  return ACL_SUCCESS;
}

SIM_API aclError aclrtDestroyStream(aclrtStream s) {
  SIM_INJECT();
  if (s == nullptr || rt().resolve(s) == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  // The worker stops; the handle is never reused for another stream.
  auto* st = static_cast<stream*>(s);
  st->close();
  std::lock_guard<std::mutex> lock(rt().retired_mutex);
  rt().retired.push_back(st);
  return ACL_SUCCESS;
}

SIM_API aclError aclrtSynchronizeStream(aclrtStream s) {
  SIM_INJECT();
  stream* st = rt().resolve(s);
  if (st == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  st->synchronize();
  return ACL_SUCCESS;
}

SIM_API aclError npuprof_sim_launch_kernel(aclrtStream s, uint32_t microseconds) {
  stream* st = rt().resolve(s);
  if (st == nullptr) return NPUPROF_SIM_ERROR_INVALID_PARAM;
  st->push({static_cast<std::int64_t>(microseconds) * 1000, nullptr, 0, host_ns()});
  return ACL_SUCCESS;
}

SIM_API void npuprof_sim_set_event_limit(uint32_t limit) { rt().event_limit.store(limit); }

SIM_API void npuprof_sim_fail(const char* function, aclError error, int times) {
  runtime& r = rt();
  std::lock_guard<std::mutex> lock(r.failures_mutex);
  if (times <= 0) {
    r.failures.erase(function);
  } else {
    r.failures[function] = {error, times};
  }
  r.any_failure.store(!r.failures.empty(), std::memory_order_release);
}

SIM_API void npuprof_sim_set_timestamp_supported(int supported) { rt().timestamps.store(supported != 0); }

SIM_API void npuprof_sim_device_clock(uint64_t* offset_us, double* drift) {
  if (offset_us != nullptr) *offset_us = boot_offset_us;
  if (drift != nullptr) *drift = drift_ppm;
}

SIM_API uint32_t npuprof_sim_live_events(void) { return rt().live_events.load(); }

SIM_API const char* npuprof_sim_library_path(void) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&npuprof_sim_library_path), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return info.dli_fname;
}
