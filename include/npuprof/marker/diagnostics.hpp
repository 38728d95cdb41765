// Every message npuprof prints goes through one function: one line on
// stderr that starts "npuprof: ", written with one call so that the lines of
// several threads do not interleave.
#pragma once

#include "abi.hpp"
#include "platform.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

inline constexpr char message_prefix[] = "npuprof: ";
inline constexpr std::size_t message_prefix_size = sizeof message_prefix - 1;

/// Prints "npuprof: ", the text `format` makes (as printf does), and a
/// newline on stderr. A message longer than 4 KiB is cut. Never throws;
/// safe from any thread, not from a signal handler.
__attribute__((format(printf, 1, 2))) NPUPROF_COLD inline void say(const char* format, ...) noexcept {
  char line[4096];
  std::memcpy(line, message_prefix, message_prefix_size);
  const std::size_t room = sizeof line - message_prefix_size - 1;  // the newline's byte kept
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(line + message_prefix_size, room, format, args);
  va_end(args);
  const std::size_t written = n < 0 ? 0 : static_cast<std::size_t>(n) < room ? static_cast<std::size_t>(n) : room - 1;
  std::size_t size = message_prefix_size + written;
  line[size++] = '\n';
  std::fwrite(line, 1, size, stderr);
}

/// Prints an error's text: npuprof's errors already start "npuprof: ", other
/// texts get the prefix.
NPUPROF_COLD inline void say_error(const char* what) noexcept {
  if (std::strncmp(what, message_prefix, message_prefix_size) == 0) what += message_prefix_size;
  say("%s", what);
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
