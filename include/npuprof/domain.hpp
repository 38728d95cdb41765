// Domains: named groups of markers that can be switched on and off together.
#pragma once

#include "marker/abi.hpp"

#include <cstddef>
#include <string_view>
#include <type_traits>

#include "marker/abi_check.hpp"
#include "marker/domain_handle.hpp"
#include "marker/marker_state.hpp"
#include "marker/pending.hpp"
#include "marker/platform.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

/// The domain markers use when none is named. Its name, "default", is reserved.
struct default_domain {
  static constexpr const char* name = "default";
};

namespace detail {

template <class D, class = void>
struct has_constant_name : std::false_type {};

template <class D>
struct has_constant_name<D, std::void_t<std::integral_constant<std::size_t, std::string_view{D::name}.size()>>>
    : std::true_type {};

/// The state word of domain type D in this module.
template <class D>
inline domain_handle handle_of{D::name};

}  // namespace detail

/// True when D can be used as a domain: it has a `name` usable at compile time.
template <class D>
inline constexpr bool is_domain_v = detail::has_constant_name<D>::value;

#define NPUPROF_DETAIL_CHECK_DOMAIN(D)                                               \
  static_assert(::npuprof::is_domain_v<D>,                                           \
                "npuprof: a domain is a type with a compile-time name, for example " \
                "`struct kernels { static constexpr const char* name = \"kernels\"; };`")

/// A domain known only at run time by its name (for C callers and
/// configuration-driven code). Usable wherever a domain type is, with the same
/// filtering. Cheap to copy; stays valid for the life of the process.
class runtime_domain {
 public:
  /// The domain of handle `h`; domain_by_name() is how users get one.
  explicit runtime_domain(detail::domain_handle& h) noexcept : handle_(&h) {}

  /// The domain's name.
  const char* name() const noexcept { return handle_->name; }

  /// The handle markers of this domain read its state from.
  detail::domain_handle& handle() const noexcept { return *handle_; }

 private:
  detail::domain_handle* handle_;
};

/// The run-time domain called `name`; the same domain as a domain type with
/// that name. "default" is the default domain.
inline runtime_domain domain_by_name(std::string_view name) {
  if (const detail::control_table* c = detail::control()) return runtime_domain(c->domain_by_name(name));
  // Before the control side is loaded: a handle kept until then.
  return runtime_domain(detail::pending_domain_by_name(name));
}

namespace detail {

/// Until the control side is loaded, a handle is off (no session can run)
/// and kept, to be registered when the control side installs its table.
NPUPROF_COLD inline std::uint16_t register_handle(domain_handle& h) noexcept {
  if (const control_table* c = control()) return c->register_domain(h);
  check_process_abi();
#if defined(__cpp_exceptions)
  try {
    defer_domain(h);
  } catch (...) {
    // Out of memory: the handle stays unregistered and is tried again.
  }
#else
  defer_domain(h);  // built without exceptions, running out of memory ends the program anyway
#endif
  return 0;
}

/// 0 when the domain does not record now, else its index + 1. The common
/// "off" case costs one load and one branch.
NPUPROF_ALWAYS_INLINE std::uint16_t recording_state(domain_handle& h) noexcept {
  const std::uint16_t s = h.state.load(std::memory_order_relaxed);
  if (NPUPROF_LIKELY(s == 0)) return 0;
  if (NPUPROF_UNLIKELY(s == domain_handle::unregistered)) return register_handle(h);
  return s;
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
