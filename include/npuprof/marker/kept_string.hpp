// Copies of strings that live as long as the process: the process-wide
// tables are never destroyed (threads may record while the process exits)
// and hand out views of what they hold.
#pragma once

#include "abi.hpp"

#include <cstddef>
#include <string_view>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

inline std::string_view keep_copy(std::string_view s) {
  char* p = new char[s.size() + 1];
  for (std::size_t i = 0; i < s.size(); ++i) p[i] = s[i];
  p[s.size()] = '\0';
  return {p, s.size()};
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
