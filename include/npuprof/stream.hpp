// Device streams as npuprof sees them.
#pragma once

#include "marker/abi.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN

/// An opaque device stream. It has the same representation as the Ascend
/// runtime's `aclrtStream` (a `void*`), so either can be passed. A null stream
/// means "host only".
using stream_t = void*;

NPUPROF_ABI_END
}  // namespace npuprof
