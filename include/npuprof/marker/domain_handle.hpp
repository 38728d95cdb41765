// A domain as a marker sees it: one state word, kept up to date by the
// control side's domain table.
#pragma once

#include "abi.hpp"

#include <atomic>
#include <cstdint>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// What a marker reads to know whether to record: 0 when off, the domain
/// index + 1 when on, `unregistered` before the first use in this module.
struct domain_handle {
  static constexpr std::uint16_t unregistered = 0xFFFF;

  const char* name;
  std::atomic<std::uint16_t> state{unregistered};

  constexpr explicit domain_handle(const char* n) noexcept : name(n) {}
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
