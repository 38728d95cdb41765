// The exception type npuprof throws from its control API (never from markers).
#pragma once

#include "marker/abi.hpp"

#include <stdexcept>
#include <string>

namespace npuprof {
NPUPROF_ABI_BEGIN

/// Thrown by session control, configuration and output functions when they
/// cannot do what was asked. The message says what and why, naming files and
/// keys. Markers never throw.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A configuration problem: the message names the source (file or
/// environment variable), the key and what is wrong with it.
class config_error : public error {
 public:
  using error::error;
};

NPUPROF_ABI_END
}  // namespace npuprof
