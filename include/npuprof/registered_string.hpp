// Strings interned once and then recorded by id: the zero-copy way to name
// ranges and marks on hot paths.
#pragma once

#include "marker/abi.hpp"

#include <cstdint>
#include <string_view>

#include "marker/marker_state.hpp"
#include "marker/pending.hpp"
#include "domain.hpp"
#include "filter.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

/// A message registered once (a lock and an allocation, at construction) and
/// then recorded without copying. Keep it alive as long as it is used; a
/// function-local `static const` is the usual way:
///
///     static const npuprof::registered_string<kernels> kGemm{"gemm"};
///     npuprof::scoped_range<kernels> r{kGemm, stream};
template <class D = default_domain>
class registered_string {
  NPUPROF_DETAIL_CHECK_DOMAIN(D);

 public:
  /// Registers `s`, copied once; the same text always gives the same id.
  constexpr explicit registered_string(std::string_view s) : id_(intern(s)) {}
  /// As above; a null pointer registers the empty string.
  constexpr explicit registered_string(const char* s) : registered_string(std::string_view(s != nullptr ? s : "")) {}

  /// The id records carry; 0 is the empty string.
  constexpr std::uint64_t id() const noexcept { return id_; }

  /// The registered text.
  std::string_view str() const {
    if (const detail::control_table* c = detail::control()) return c->lookup(id_);
    return detail::pending_text(id_);
  }

 private:
  static constexpr std::uint64_t intern(std::string_view s) {
    if constexpr (compiled_in<D>) {
      if (const detail::control_table* c = detail::control()) return c->intern(s);
      return detail::intern_pending(s);
    } else {
      (void)s;
      return 0;
    }
  }

  std::uint64_t id_;
};

NPUPROF_ABI_END
}  // namespace npuprof
