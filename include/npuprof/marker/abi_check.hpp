// The process's npuprof ABI, one word shared by every module whatever npuprof
// version it was built against. The first control side (the module that
// includes session.hpp) claims it; a module built against another ABI is told
// on stderr, records nothing and cannot start a session, instead of sharing
// state laid out differently.
#pragma once

#include <atomic>
#include <cstdio>

#include "abi.hpp"
#include "diagnostics.hpp"
#include "platform.hpp"

namespace npuprof {
// Outside the versioned namespace on purpose: every version finds this one.
namespace unversioned {
NPUPROF_PROCESS_WIDE inline std::atomic<unsigned> process_abi{0};
}  // namespace unversioned

NPUPROF_ABI_BEGIN
namespace detail {

/// The error a module of another ABI gets.
inline void describe_abi_mismatch(char* out, std::size_t size, unsigned process) noexcept {
  std::snprintf(out, size,
                "npuprof: this module was built against npuprof ABI %u, but the process already uses ABI %u: "
                "its markers are not recorded and it cannot start a session (build every module against the "
                "same npuprof version)",
                static_cast<unsigned>(NPUPROF_ABI_VERSION), process);
}

NPUPROF_COLD inline void report_abi_mismatch(unsigned process) noexcept {
  static std::atomic<bool> said{false};
  if (said.exchange(true, std::memory_order_relaxed)) return;
  char text[320];
  describe_abi_mismatch(text, sizeof text, process);
  say_error(text);
}

/// For a control side: makes this module's ABI the process's, or finds it
/// already is. False (and said once) when another ABI has it.
inline bool claim_process_abi() noexcept {
  unsigned expected = 0;
  if (unversioned::process_abi.compare_exchange_strong(expected, NPUPROF_ABI_VERSION) ||
      expected == NPUPROF_ABI_VERSION) {
    return true;
  }
  report_abi_mismatch(expected);
  return false;
}

/// For the marker layer, while it finds no control table: says once when
/// the reason is a control side of another ABI.
inline void check_process_abi() noexcept {
  const unsigned process = unversioned::process_abi.load(std::memory_order_relaxed);
  if (NPUPROF_UNLIKELY(process != 0 && process != NPUPROF_ABI_VERSION)) report_abi_mismatch(process);
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
