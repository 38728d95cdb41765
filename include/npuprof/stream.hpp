// Device streams as npuprof sees them.
#pragma once

namespace npuprof {

/// An opaque device stream. It has the same representation as the Ascend
/// runtime's `aclrtStream` (a `void*`), so either can be passed. A null stream
/// means "host only".
using stream_t = void*;

}  // namespace npuprof
