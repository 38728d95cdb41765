// The run-time domain filter: which domains record, changeable while threads
// record. Part of the control header (<npuprof/session.hpp>); sessions set it
// from their configuration when they start.
#pragma once

#include "marker/abi.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace npuprof {
NPUPROF_ABI_BEGIN

/// The run-time filter: the `mstx` switch plus domain include/exclude lists.
/// When both lists are given, only the include list takes effect.
struct domain_filter {
  bool markers = true;
  std::vector<std::string> include;
  std::vector<std::string> exclude;

  bool accepts(std::string_view name) const {
    if (!markers) return false;
    auto in = [&](const std::vector<std::string>& list) {
      for (const std::string& item : list) {
        if (item == name) return true;
      }
      return false;
    };
    if (!include.empty()) return in(include);
    return !in(exclude);
  }
};

/// Replaces the run-time filter. Takes effect at each thread's next marker;
/// ranges already begun still record their end. When both lists are set, only
/// the include list is used and a warning says so.
void set_domain_filter(domain_filter f);

/// The run-time filter in force.
domain_filter current_domain_filter();

/// The `mstx` switch: turns all markers on or off, keeping the domain lists.
void set_markers_enabled(bool on);

/// Records only the domains named (an empty list removes the include filter).
void set_domain_include(std::vector<std::string> names);

/// Records every domain except those named.
void set_domain_exclude(std::vector<std::string> names);

NPUPROF_ABI_END
}  // namespace npuprof
