// Which domains are compiled in: the compile-time filters (-D switches) that
// remove markers' code. The run-time filter, which can change while threads
// record, is set through the control header (domain_filter.hpp).
#pragma once

#include "marker/abi.hpp"

#include <string_view>

#include "marker/platform.hpp"
#include "domain.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

constexpr bool is_list_space(char c) noexcept { return c == ' ' || c == '\t' || c == '"' || c == '\''; }

constexpr std::string_view trim_item(std::string_view s) noexcept {
  while (!s.empty() && is_list_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_list_space(s.back())) s.remove_suffix(1);
  return s;
}

/// Whether the comma-separated `list` names `name` (spaces and quotes around
/// items are ignored, so both -DX=a,b and -DX='"a,b"' work).
constexpr bool list_contains(std::string_view list, std::string_view name) noexcept {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    const std::string_view item = trim_item(list.substr(0, comma));
    if (!item.empty() && item == name) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

constexpr bool list_is_empty(std::string_view list) noexcept {
  for (char c : list) {
    if (!is_list_space(c) && c != ',') return false;
  }
  return true;
}

#if defined(NPUPROF_COMPILE_INCLUDE)
inline constexpr std::string_view compile_include = NPUPROF_DETAIL_STR(NPUPROF_COMPILE_INCLUDE);
#else
inline constexpr std::string_view compile_include = "";
#endif
#if defined(NPUPROF_COMPILE_EXCLUDE)
inline constexpr std::string_view compile_exclude = NPUPROF_DETAIL_STR(NPUPROF_COMPILE_EXCLUDE);
#else
inline constexpr std::string_view compile_exclude = "";
#endif

constexpr bool compile_filter_accepts(std::string_view name) noexcept {
#if defined(NPUPROF_DISABLE)
  (void)name;
  return false;
#else
  if (!list_is_empty(compile_include)) return list_contains(compile_include, name);
  return !list_contains(compile_exclude, name);
#endif
}

}  // namespace detail

/// True when markers of domain D are compiled in. When false they generate no
/// code at all. Set by -DNPUPROF_DISABLE, -DNPUPROF_COMPILE_INCLUDE=a,b and
/// -DNPUPROF_COMPILE_EXCLUDE=c (include wins when both are given).
template <class D>
inline constexpr bool compiled_in = detail::compile_filter_accepts(std::string_view{D::name});

/// Run-time domains are not known at compile time: only NPUPROF_DISABLE
/// removes their markers.
template <>
inline constexpr bool compiled_in<runtime_domain> =
#if defined(NPUPROF_DISABLE)
    false;
#else
    true;
#endif

NPUPROF_ABI_END
}  // namespace npuprof
