// The run-time domain filter: which domains record, changeable while threads
// record. Part of the control header (<npuprof/session.hpp>); sessions set it
// from their configuration when they start.
#pragma once

#include "detail/abi.hpp"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "detail/diagnostics.hpp"
#include "detail/domain_table.hpp"
#include "detail/state.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

/// The run-time filter: the `mstx` switch and the domain include/exclude lists.
using domain_filter = detail::domain_filter;

/// Replaces the run-time filter. Takes effect at each thread's next marker;
/// ranges already begun still record their end. When both lists are set, only
/// the include list is used and a warning says so.
inline void set_domain_filter(domain_filter f) {
  if (!f.include.empty() && !f.exclude.empty()) {
    detail::say("warning: both a domain include and a domain exclude list are set; only the include list takes "
                "effect");
  }
  detail::state().domains.set_filter(std::move(f));
}

/// The run-time filter in force.
inline domain_filter current_domain_filter() { return detail::state().domains.filter(); }

/// The `mstx` switch: turns all markers on or off, keeping the domain lists.
inline void set_markers_enabled(bool on) {
  domain_filter f = current_domain_filter();
  f.markers = on;
  detail::state().domains.set_filter(std::move(f));
}

/// Records only the domains named (an empty list removes the include filter).
inline void set_domain_include(std::vector<std::string> names) {
  domain_filter f = current_domain_filter();
  f.include = std::move(names);
  set_domain_filter(std::move(f));
}

/// Records every domain except those named.
inline void set_domain_exclude(std::vector<std::string> names) {
  domain_filter f = current_domain_filter();
  f.exclude = std::move(names);
  set_domain_filter(std::move(f));
}

NPUPROF_ABI_END
}  // namespace npuprof
