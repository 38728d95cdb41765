// Marker macros: the message must be a string literal, interned once per call
// site, so these are the cheapest markers. With -DNPUPROF_DISABLE they expand
// to nothing and their arguments are not evaluated.
//
//     NPUPROF_RANGE(kernels, "gemm");           // scoped range to the end of the block
//     NPUPROF_RANGE(kernels, "gemm", stream);   // ... tied to a device stream
//     NPUPROF_FUNC_RANGE(kernels);              // named after the enclosing function
//     NPUPROF_FUNC_RANGE_ON(kernels, stream);   // ... tied to a device stream
//     NPUPROF_MARK(kernels, "step");            // instant event
#pragma once

#include "marker/abi.hpp"

#include "marker/platform.hpp"

#if defined(NPUPROF_DISABLE)

#define NPUPROF_RANGE(D, ...) static_assert(true, "")
#define NPUPROF_FUNC_RANGE(D) static_assert(true, "")
#define NPUPROF_FUNC_RANGE_ON(D, stream) static_assert(true, "")
#define NPUPROF_MARK(D, ...) static_cast<void>(0)

#else

#include "mark.hpp"
#include "range.hpp"
#include "registered_string.hpp"
#include "stream.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// A call site's interned string and optional stream. `Site` is a lambda type
/// unique to the call site, so each site interns its string exactly once.
template <class D>
struct site_message {
  const registered_string<D>& text;
  stream_t stream;
};

template <class D, class Site>
inline site_message<D> call_site(Site, const char* text, stream_t stream = nullptr) {
  if constexpr (compiled_in<D>) {
    static const registered_string<D> interned{text};
    return {interned, stream};
  } else {
    static constexpr registered_string<D> none{""};
    (void)text;
    return {none, stream};
  }
}

template <class D>
class site_range {
 public:
  explicit site_range(site_message<D> site) noexcept : range_(site.text, site.stream) {}

 private:
  scoped_range<D> range_;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof

#define NPUPROF_DETAIL_SITE(D, ...) ::npuprof::detail::call_site<D>([] {}, __VA_ARGS__)

#define NPUPROF_RANGE(D, ...)                                                              \
  const ::npuprof::detail::site_range<D> NPUPROF_DETAIL_CAT(npuprof_range_, __COUNTER__) { \
    NPUPROF_DETAIL_SITE(D, "" __VA_ARGS__)                                                 \
  }

#define NPUPROF_FUNC_RANGE(D)                                                              \
  const ::npuprof::detail::site_range<D> NPUPROF_DETAIL_CAT(npuprof_range_, __COUNTER__) { \
    NPUPROF_DETAIL_SITE(D, __func__)                                                       \
  }

#define NPUPROF_FUNC_RANGE_ON(D, stream)                                                   \
  const ::npuprof::detail::site_range<D> NPUPROF_DETAIL_CAT(npuprof_range_, __COUNTER__) { \
    NPUPROF_DETAIL_SITE(D, __func__, stream)                                               \
  }

#define NPUPROF_MARK(D, ...)                                           \
  do {                                                                 \
    const auto npuprof_site_ = NPUPROF_DETAIL_SITE(D, "" __VA_ARGS__); \
    ::npuprof::mark<D>(npuprof_site_.text, npuprof_site_.stream);      \
  } while (0)

#endif
