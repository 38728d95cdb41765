// Times as trace_view.json writes them: microseconds with three decimals,
// and durations written so that a reader adding ts and dur as float64 (every
// JSON viewer does) lands exactly on the slice's end as it reads it.
#pragma once

#include "../marker/abi.hpp"
#include "../marker/platform.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

inline void append_us(fmt::memory_buffer& out, std::int64_t ns) {
  if (ns < 0) ns = 0;
  const fmt::format_int us(ns / 1000);
  out.append(us.data(), us.data() + us.size());
  const auto frac = static_cast<int>(ns % 1000);
  const char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10)};
  out.append(digits, digits + 4);
}

/// The two digits of `n` < 100.
inline const char* digit_pair(unsigned n) noexcept {
  static constexpr char digits[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  return digits + 2 * n;
}

/// Bytes format_fixed() writes, whatever the number.
inline constexpr std::size_t fixed_block = 24;

/// `units` / 10^decimals as a decimal number ("12.3456"), in the first bytes
/// of `to`; returns how many. Written right to left and copied as one block
/// of fixed_block bytes (the bytes after the number are left over): no
/// library call for the few digits a duration has (a third of the export's
/// time went into them).
inline std::size_t format_fixed(char* to, std::uint64_t units, int decimals) noexcept {
  char text[48] = {};
  char* const end = text + 24;  // at most 21 bytes: 20 digits, the point
  char* p = end;
  for (; decimals >= 2; decimals -= 2) {  // two digits at a time
    p -= 2;
    std::memcpy(p, digit_pair(static_cast<unsigned>(units % 100)), 2);
    units /= 100;
  }
  if (decimals == 1) {
    *--p = static_cast<char>('0' + units % 10);
    units /= 10;
  }
  *--p = '.';
  do {
    *--p = static_cast<char>('0' + units % 10);
    units /= 10;
  } while (units != 0);
  std::memcpy(to, p, fixed_block);
  return static_cast<std::size_t>(end - p);
}

/// The distance from positive, finite `x` to the next double up.
inline double end_ulp(double x) noexcept {
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits &= 0x7ff0000000000000u;  // x's power of two; its ulp is 2^-52 of it
  double power;
  std::memcpy(&power, &bits, sizeof power);
  return power * 0x1p-52;
}

/// The double a reader gets from `ns` written as microseconds with three
/// decimals: ns / 1000 correctly rounded. A decimal "u.ddd" reads as units /
/// 10^k correctly rounded, which is what dividing the integer units by 10^k
/// in double gives while units < 2^53: candidates are tried without
/// formatting or parsing them. Above (a steady clock of a machine up for
/// more than 104 days), turning ns into a double would round once before
/// the division rounds again: the whole microseconds and the rest are added
/// instead, which rounds once (the rest, k/1000, is never close enough to
/// a point halfway between two doubles for its own rounding to matter).
inline double reads_as(std::int64_t ns) noexcept {
  if (NPUPROF_LIKELY(ns < (std::int64_t{1} << 53))) return static_cast<double>(ns) / 1000.0;
  return static_cast<double>(ns / 1000) + static_cast<double>(ns % 1000) / 1000.0;
}

/// Whether "dur" written with three decimals, added to "ts" as a reader
/// reads both (float64), lands exactly on the slice's end as it reads.
inline bool lands_with_three_decimals(std::int64_t ts_ns, std::int64_t dur_ns) noexcept {
  return reads_as(ts_ns) + reads_as(dur_ns) == reads_as(ts_ns + dur_ns);
}

/// For a slice whose start and end read as `ts` and `end` and whose
/// duration did not land with three decimals (see write_duration()): the
/// fewest more decimals that do, and `units`, the duration in
/// 10^-decimals microseconds. False when none up to twelve does.
inline bool more_decimals(double ts, double end, std::uint64_t& units, int& decimals) noexcept {
  // end - ts exactly, as the rounded difference and what rounding left out
  // (end >= ts >= 0). The difference alone is exact only while end is at
  // most twice ts: a slice lasting longer than the uptime it began at (a
  // long job just after boot) is not.
  const double want = end - ts;
  const double rest = (end - want) - ts;
  // The exact difference is within an ulp of `end` from the duration
  // recorded (each of the two times read is within half an ulp of its own).
  // A step of more than four ulps rounds it back to the three-decimal
  // duration, which did not land: such steps are skipped without a try.
  const double ulp = end_ulp(end);
  double scale = 10000.0;
  decimals = 4;
  for (; decimals < 12 && scale * ulp < 0.25; ++decimals) scale *= 10.0;
  for (; decimals <= 12; ++decimals, scale *= 10.0) {
    const double scaled = want * scale + rest * scale;
    if (scaled >= 9007199254740992.0) break;  // 2^53: no longer exact
    // The nearest integer, inline (std::nearbyint is a library call here),
    // and its neighbours, should the scaling have rounded it astray.
    const double nearest = static_cast<double>(static_cast<std::uint64_t>(scaled + 0.5));
    double candidate = nearest;
    if (ts + candidate / scale != end) candidate = nearest + 1;
    if (ts + candidate / scale != end && nearest >= 1) candidate = nearest - 1;
    if (ts + candidate / scale == end) {
      units = static_cast<std::uint64_t>(candidate);
      return true;
    }
  }
  return false;
}

/// A duration that no decimal up to twelve lands with: the double nearest
/// to end - ts that does, written in its shortest form (which reads back as
/// it). Where no double lands (rounding ties can leave none), the largest
/// that stays short of the end: a slice may then end an ulp early as read,
/// but never overshoots what follows it.
inline double landing_double(double ts, double end) noexcept {
  double x = end - ts;
  for (int i = 0; i < 16 && ts + x > end; ++i) x = std::nextafter(x, 0.0);
  for (int i = 0; i < 16 && ts + x < end && ts + std::nextafter(x, HUGE_VAL) <= end; ++i) {
    x = std::nextafter(x, HUGE_VAL);
  }
  return x;
}

/// What write_duration() wrote: its bytes, and whether the duration lands
/// on the end aimed at; where not, where it ends as read (just before).
struct written_duration {
  std::size_t size;
  bool landed;
  double read_end;
};

/// Bytes write_duration() may write, whatever the duration.
inline constexpr std::size_t duration_room = 32;

/// Writes at `to` the `dur` of a slice at `ts_ns` lasting `dur_ns` so that
/// a reader adding ts and dur as float64 (every JSON viewer does) lands
/// exactly on the double the slice's end time reads as, or on `*target`
/// where given (three decimals are then not tried: the caller did, or it
/// aims at the end as read of an enclosing slice that could not land on
/// its own). Otherwise, at absolute timestamps (~1e10 us), a quarter of the
/// sums come out an ulp off, and a viewer sees back-to-back slices overlap
/// and nested ones outlast their parent. Three decimals when they land
/// (most slices), else the fewest more decimals that do, else a double that
/// does (landing_double()).
inline written_duration write_duration(char* to, std::int64_t ts_ns, std::int64_t dur_ns,
                                       const double* target = nullptr) noexcept {
  static_assert(duration_room >= fixed_block && duration_room >= 24, "a block, or the longest shortest double");
  ts_ns = std::max<std::int64_t>(ts_ns, 0);
  dur_ns = std::max<std::int64_t>(dur_ns, 0);
  if (target == nullptr && lands_with_three_decimals(ts_ns, dur_ns)) {
    return {format_fixed(to, static_cast<std::uint64_t>(dur_ns), 3), true, 0};
  }
  const double ts = reads_as(ts_ns), end = target != nullptr ? *target : reads_as(ts_ns + dur_ns);
  std::uint64_t units = 0;
  int decimals = 0;
  if (more_decimals(ts, end, units, decimals)) return {format_fixed(to, units, decimals), true, 0};
  const double x = landing_double(ts, end);
  const auto size = static_cast<std::size_t>(fmt::format_to(to, "{}", x) - to);  // the shortest form: reads back as x
  return {size, ts + x == end, ts + x};
}

inline void append_duration(fmt::memory_buffer& out, std::int64_t ts_ns, std::int64_t dur_ns) {
  char buf[duration_room];
  out.append(buf, buf + write_duration(buf, ts_ns, dur_ns).size);
}

inline void append_int(fmt::memory_buffer& out, std::uint64_t v) {
  const fmt::format_int s(v);
  out.append(s.data(), s.data() + s.size());
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
