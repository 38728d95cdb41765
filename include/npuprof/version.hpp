// npuprof's version, for code and for the metadata written with each trace.
#pragma once

#include "marker/abi.hpp"

#define NPUPROF_VERSION_MAJOR 0
#define NPUPROF_VERSION_MINOR 1
#define NPUPROF_VERSION_PATCH 0

namespace npuprof {
NPUPROF_ABI_BEGIN
/// The library version as "major.minor.patch".
inline constexpr const char* version_string = "0.1.0";
NPUPROF_ABI_END
}  // namespace npuprof
