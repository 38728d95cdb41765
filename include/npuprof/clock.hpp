// Timestamps: a raw hardware counter read on the hot path, converted to
// nanoseconds of CLOCK_MONOTONIC (std::chrono::steady_clock) later, off the
// hot path. Only <time.h>: <chrono> and the intrinsics headers would add
// tens of thousands of lines to every instrumented file.
#pragma once

#include "marker/abi.hpp"

#include <time.h>

#include <cstdint>

#include "marker/platform.hpp"

#if !defined(NPUPROF_CLOCK_STEADY) && (defined(__x86_64__) || defined(__i386__))
#define NPUPROF_DETAIL_CLOCK_TSC 1
#elif !defined(NPUPROF_CLOCK_STEADY) && defined(__aarch64__)
#define NPUPROF_DETAIL_CLOCK_CNTVCT 1
#else
#define NPUPROF_DETAIL_CLOCK_STEADY 1
#endif

namespace npuprof {
NPUPROF_ABI_BEGIN

namespace detail {
inline std::int64_t clock_ns(clockid_t id) noexcept {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}
}  // namespace detail

/// Nanoseconds on CLOCK_MONOTONIC: the clock of std::chrono::steady_clock
/// on Linux, so the two can be compared.
inline std::int64_t steady_ns() noexcept { return detail::clock_ns(CLOCK_MONOTONIC); }

/// Nanoseconds since the Unix epoch on CLOCK_REALTIME (the system clock).
inline std::int64_t wall_ns() noexcept { return detail::clock_ns(CLOCK_REALTIME); }

/// The raw counter every event is stamped with: rdtsc on x86-64, cntvct_el0
/// on aarch64, steady_clock elsewhere or with -DNPUPROF_CLOCK_STEADY.
NPUPROF_ALWAYS_INLINE std::uint64_t raw_ticks() noexcept {
#if defined(NPUPROF_DETAIL_CLOCK_TSC)
  return __builtin_ia32_rdtsc();
#elif defined(NPUPROF_DETAIL_CLOCK_CNTVCT)
  std::uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return static_cast<std::uint64_t>(steady_ns());
#endif
}

/// Name of the raw counter, as written to the trace metadata.
inline constexpr const char* raw_clock_name =
#if defined(NPUPROF_DETAIL_CLOCK_TSC)
    "tsc";
#elif defined(NPUPROF_DETAIL_CLOCK_CNTVCT)
    "cntvct_el0";
#else
    "steady_clock";
#endif

/// A raw counter value and the steady_clock time read around it.
struct clock_point {
  std::uint64_t ticks = 0;
  std::int64_t steady = 0;  // ns
};

/// Reads the raw counter between two steady_clock reads, a few times, and keeps
/// the tightest pair so that scheduling noise does not enter the calibration.
inline clock_point sample_clock() noexcept {
  clock_point best{};
  std::int64_t best_gap = INT64_MAX;
  for (int i = 0; i < 7; ++i) {
    const std::int64_t before = steady_ns();
    const std::uint64_t ticks = raw_ticks();
    const std::int64_t after = steady_ns();
    if (after - before < best_gap) {
      best_gap = after - before;
      best = {ticks, before + (after - before) / 2};
    }
  }
  return best;
}

/// Linear map from raw ticks to steady_clock nanoseconds, fitted through two
/// clock points taken far apart (the wider apart, the more exact).
class clock_calibration {
 public:
  /// The identity map (one tick a nanosecond), until a session calibrates.
  clock_calibration() = default;
  /// The map through `first` and `last`; ticks of steady_clock map 1:1.
  clock_calibration(clock_point first, clock_point last) noexcept : first_(first), last_(last) {
#if defined(NPUPROF_DETAIL_CLOCK_STEADY)
    ns_per_tick_ = 1.0;
#else
    const double dt = static_cast<double>(last.ticks - first.ticks);
    ns_per_tick_ = dt > 0 ? static_cast<double>(last.steady - first.steady) / dt : 1.0;
#endif
  }

  /// steady_clock nanoseconds of a raw counter value.
  std::int64_t to_ns(std::uint64_t ticks) const noexcept {
    const double delta = static_cast<double>(static_cast<std::int64_t>(ticks - first_.ticks));
    return first_.steady + static_cast<std::int64_t>(delta * ns_per_tick_);
  }

  /// The slope of the map: nanoseconds a tick (written to the metadata).
  double ns_per_tick() const noexcept { return ns_per_tick_; }
  /// The two points the map goes through.
  clock_point first() const noexcept { return first_; }
  clock_point last() const noexcept { return last_; }

 private:
  clock_point first_{};
  clock_point last_{};
  double ns_per_tick_ = 1.0;
};

NPUPROF_ABI_END
}  // namespace npuprof
