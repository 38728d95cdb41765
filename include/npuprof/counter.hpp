// Counters: numeric time series (queue depth, batch size, bytes in flight).
#pragma once

#include "marker/abi.hpp"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "marker/message.hpp"
#include "marker/writer.hpp"
#include "domain.hpp"
#include "filter.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

template <class T>
inline void record_counter(domain_handle& h, const message& name, T value) noexcept {
  static_assert(std::is_arithmetic_v<T>, "npuprof: a counter value must be an integer or floating-point number");
  const std::uint16_t s = recording_state(h);
  if (s == 0) return;
  if constexpr (std::is_floating_point_v<T>) {
    const double v = static_cast<double>(value);
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    write_counter(tag_index(s), name, bits, counter_is_double);
  } else {
    write_counter(tag_index(s), name, static_cast<std::uint64_t>(static_cast<std::int64_t>(value)), 0);
  }
}

}  // namespace detail

/// Records one sample of counter `name` in domain D. Integers are kept as
/// 64-bit integers, floating-point values as doubles; a value of any other
/// type does not compile. Each counter name is one counter track.
///
/// Thread safety: any thread, without locks. Cost: as a mark (one counter
/// read and a store into the thread's buffer).
///
///     npuprof::counter<kernels>("queue_depth", 17);
template <class D = default_domain, class T>
NPUPROF_ALWAYS_INLINE void counter(detail::message name, T value) noexcept {
  NPUPROF_DETAIL_CHECK_DOMAIN(D);
  if constexpr (compiled_in<D>) {
    detail::record_counter(detail::handle_of<D>, name, value);
  } else {
    (void)name, (void)value;
  }
}

/// Records a counter sample in a domain known at run time (see
/// domain_by_name). Same thread safety and cost as the typed overload.
template <class T>
inline void counter(runtime_domain d, detail::message name, T value) noexcept {
  if constexpr (compiled_in<runtime_domain>) {
    detail::record_counter(d.handle(), name, value);
  } else {
    (void)d, (void)name, (void)value;
  }
}

NPUPROF_ABI_END
}  // namespace npuprof
