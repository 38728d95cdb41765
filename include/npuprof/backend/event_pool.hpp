// Per-stream pools of device events: taken by recording threads without
// locks, given back by the resolver once the device has passed them.
//
// A pool is a ring of `capacity` events, a power of two. Sequence numbers
// count the events handed out on the stream; event `seq` lives in slot
// `seq & (capacity - 1)`. A thread takes the next number (refused when all
// slots are in flight: the pool is dry), records the slot's event on the
// stream, then publishes that it did. The
// resolver walks the numbers in order, reads each event's time once it has
// completed, and moves `resolved` forward, which frees the slot for number
// `seq + capacity`.
//
// Taking a number: most streams are fed by one thread, so the thread that
// created the pool owns it and takes numbers with plain loads and stores.
// The first other thread to record on the stream switches the pool to shared
// for good: from then on every thread takes numbers with a compare-and-swap.
// The switch is a Dekker handshake (the owner says it is busy taking, then
// checks for the switch; the switcher says it switches, then checks that the
// owner is not busy) whose owner side needs no fence: the switcher runs an
// asymmetric fence for both (see asymmetric_fence.hpp). Without one, pools
// are shared from the start.
//
// Publishing is the one store per event that the resolver reads back from
// another core: the words it writes are packed eight to a cache line, apart
// from the event handles, which are only read once the pool exists.
#pragma once

#include "../marker/abi.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <new>
#include <thread>

#include "../engine/asymmetric_fence.hpp"
#include "../marker/device_hook.hpp"
#include "../marker/platform.hpp"
#include "../marker/prefetch.hpp"
#include "../marker/thread_buffer.hpp"
#include "acl_runtime.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

class event_pool {
 public:
  enum class state : int { empty, creating, ready, failed, refused };

  std::atomic<void*> stream{nullptr};  // the key; set once
  std::atomic<state> status{state::empty};

  /// Creates `wanted` events rounded down to a power of two, or as many as
  /// the device gives (also rounded down). Runs once per stream, on the first
  /// thread that ties a marker to it, which owns the pool while it is the
  /// only one (when `ownable`). With `check`, the stream is checked first by
  /// recording one of the events on it: when the runtime refuses it, the
  /// pool is `refused` and that call's error is returned.
  int create(const acl_runtime& rt, std::uint32_t wanted, bool ownable, void* check = nullptr,
             bool checking = false) noexcept {
    owner_ = this_thread_token();
    sharing_.store(ownable ? owned : shared, std::memory_order_relaxed);
    events_.reset(new (std::nothrow) void*[wanted]);
    published_.reset(new (std::nothrow) std::atomic<std::uint64_t>[wanted]);
    std::uint32_t n = 0;
    if (events_ != nullptr && published_ != nullptr) {
      while (n < wanted && rt.create_event_with_flag(&events_[n], acl_runtime::event_time_line) == 0) ++n;
    }
    std::uint32_t ring = n == 0 ? 0 : std::uint32_t{1} << (31 - __builtin_clz(n));
    while (n > ring) rt.destroy_event(events_[--n]);
    if (checking && ring != 0) {
      if (const int err = rt.record_event(events_[0], check); err != 0) {
        while (ring > 0) rt.destroy_event(events_[--ring]);
        status.store(state::refused, std::memory_order_release);
        return err;
      }
    }
    for (std::uint32_t i = 0; i < ring; ++i) published_[i].store(0, std::memory_order_relaxed);
    capacity_ = ring;
    mask_ = ring - 1;
    status.store(ring != 0 ? state::ready : state::failed, std::memory_order_release);
    return 0;
  }

  /// Takes the next sequence number, or no_device_event when all events are
  /// in flight.
  std::uint64_t take() noexcept {
    if (NPUPROF_LIKELY(owner_ == this_thread_token())) {
      owner_busy_.store(true, std::memory_order_relaxed);
      light_fence();
      if (NPUPROF_LIKELY(sharing_.load(std::memory_order_relaxed) == owned)) {
        const std::uint64_t seq = issued_.load(std::memory_order_relaxed);
        if (NPUPROF_UNLIKELY(seq - resolved_.load(std::memory_order_acquire) >= capacity_)) {
          owner_busy_.store(false, std::memory_order_release);
          return no_device_event;
        }
        issued_.store(seq + 1, std::memory_order_relaxed);
        owner_busy_.store(false, std::memory_order_release);
        return seq;
      }
      owner_busy_.store(false, std::memory_order_relaxed);
    } else if (NPUPROF_UNLIKELY(sharing_.load(std::memory_order_acquire) != shared)) {
      share();
    }
    return take_shared();
  }

  /// Whether numbers are taken with a compare-and-swap by every thread.
  bool is_shared() const noexcept { return sharing_.load(std::memory_order_acquire) == shared; }

  /// The device event that number `seq` uses.
  void* event(std::uint64_t seq) const noexcept { return events_[seq & mask_]; }

  /// Fetches for writing what recording number `seq` will touch a few
  /// numbers ahead: the event two ranges on, the next line of publications.
  void prefetch_ahead(std::uint64_t seq) const noexcept {
    prefetch_for_write(events_[(seq + 4) & mask_]);
    prefetch_for_write(&published_[(seq + 8) & mask_]);
  }

  /// Publishes that event `seq` was recorded (or that recording failed).
  void publish(std::uint64_t seq, bool ok) noexcept {
    published_[seq & mask_].store(((seq + 1) << 1) | (ok ? 0 : 1), std::memory_order_release);
  }

  // The resolver's side.

  std::uint64_t resolved() const noexcept { return resolved_.load(std::memory_order_acquire); }
  std::uint64_t issued() const noexcept { return issued_.load(std::memory_order_acquire); }
  std::uint32_t capacity() const noexcept { return capacity_; }

  /// Whether event `seq` was recorded yet; `failed` says whether recording
  /// failed.
  bool is_published(std::uint64_t seq, bool& failed) const noexcept {
    const std::uint64_t r = published_[seq & mask_].load(std::memory_order_acquire);
    failed = (r & 1) != 0;
    return (r >> 1) == seq + 1;
  }

  /// Frees the slots of all events before `seq` (the resolver's only write,
  /// made once per pass so that recording threads rarely miss on it).
  void release_before(std::uint64_t seq) noexcept { resolved_.store(seq, std::memory_order_release); }

 private:
  enum : int { owned, switching, shared };

  std::uint64_t take_shared() noexcept {
    std::uint64_t seq = issued_.load(std::memory_order_relaxed);
    do {
      if (seq - resolved_.load(std::memory_order_acquire) >= capacity_) return no_device_event;
    } while (!issued_.compare_exchange_weak(seq, seq + 1, std::memory_order_acq_rel, std::memory_order_relaxed));
    return seq;
  }

  // Once per pool, on the first thread other than the owner (others that come
  // meanwhile wait for it): after the fence, the owner either sees the switch
  // or its busy flag is visible here, and then its take ends soon.
  NPUPROF_COLD void share() noexcept {
    int expected = owned;
    if (sharing_.compare_exchange_strong(expected, switching, std::memory_order_acq_rel)) {
      heavy_fence();
      while (owner_busy_.load(std::memory_order_acquire)) std::this_thread::yield();
      sharing_.store(shared, std::memory_order_release);
      return;
    }
    while (sharing_.load(std::memory_order_acquire) != shared) std::this_thread::yield();
  }

  std::unique_ptr<void*[]> events_;
  // (seq + 1) << 1 once event `seq` was recorded, | 1 if recording failed.
  std::unique_ptr<std::atomic<std::uint64_t>[]> published_;
  std::uint32_t capacity_ = 0;
  std::uint64_t mask_ = 0;
  // Written by recording threads and by the resolver: apart, so that neither
  // invalidates the other's line on every event. The first line also holds
  // what the owner checks on each take.
  alignas(64) std::atomic<std::uint64_t> issued_{0};
  const void* owner_ = nullptr;  // set before the pool is ready, then fixed
  std::atomic<bool> owner_busy_{false};
  std::atomic<int> sharing_{shared};
  alignas(64) std::atomic<std::uint64_t> resolved_{0};
};

/// The pools of all streams, found by stream handle without locks. A fixed
/// table: when it is full, further streams are recorded host-only.
class event_pools {
 public:
  static constexpr std::size_t max_streams = 256;

  /// The pool of `stream`, claiming a free entry for a new stream; null when
  /// the table is full.
  event_pool* find_or_claim(void* stream) noexcept {
    const std::size_t start = hash(stream);
    for (std::size_t i = 0; i < max_streams; ++i) {
      event_pool& p = pools_[(start + i) % max_streams];
      void* key = p.stream.load(std::memory_order_acquire);
      if (key == stream) return &p;
      if (key == nullptr) {
        if (p.stream.compare_exchange_strong(key, stream, std::memory_order_acq_rel)) return &p;
        if (key == stream) return &p;
      }
    }
    return nullptr;
  }

  template <class F>
  void for_each_ready(F&& f) {
    each_ready(*this, f);
  }
  template <class F>
  void for_each_ready(F&& f) const {
    each_ready(*this, f);
  }

 private:
  template <class Self, class F>
  static void each_ready(Self& self, F& f) {
    for (auto& p : self.pools_) {
      if (p.status.load(std::memory_order_acquire) == event_pool::state::ready) f(p);
    }
  }

  static std::size_t hash(void* p) noexcept {
    return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(p) >> 4) * 0x9E3779B97F4A7C15ULL >> 56);
  }

  event_pool pools_[max_streams];
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
