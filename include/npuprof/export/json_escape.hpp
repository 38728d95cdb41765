// JSON string output that is always valid: quotes, backslashes and control
// characters are escaped, and each byte that is not part of valid UTF-8 is
// replaced by U+FFFD.
#pragma once

#include "../marker/abi.hpp"

#include <cstddef>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Length of the valid UTF-8 sequence starting at s[i] (which is >= 0x80),
/// or 0 when it is not valid.
inline std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  auto cont = [&](std::size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
  const unsigned char c = byte(i);
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    const unsigned char c1 = byte(i + 1);
    if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
    if (c == 0xED && c1 > 0x9F) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    const unsigned char c1 = byte(i + 1);
    if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
    if (c == 0xF4 && c1 > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

/// `s` as valid UTF-8: each byte that starts no valid sequence becomes
/// U+FFFD, as append_json_string() writes it.
inline std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = static_cast<unsigned char>(s[i]) < 0x80 ? 1 : utf8_sequence(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

/// Appends `s` as a JSON string literal, quotes included.
inline void append_json_string(fmt::memory_buffer& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.push_back('"');
  std::size_t run = 0;  // start of bytes that can be copied as they are
  std::size_t i = 0;
  auto flush = [&](std::size_t end) { out.append(s.data() + run, s.data() + end); };
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      const std::size_t n = utf8_sequence(s, i);
      if (n != 0) {
        i += n;
        continue;
      }
      flush(i);
      out.append(std::string_view("\xEF\xBF\xBD"));
      run = ++i;
      continue;
    }
    flush(i);
    switch (c) {
      case '"':
        out.append(std::string_view("\\\""));
        break;
      case '\\':
        out.append(std::string_view("\\\\"));
        break;
      case '\n':
        out.append(std::string_view("\\n"));
        break;
      case '\r':
        out.append(std::string_view("\\r"));
        break;
      case '\t':
        out.append(std::string_view("\\t"));
        break;
      case '\b':
        out.append(std::string_view("\\b"));
        break;
      case '\f':
        out.append(std::string_view("\\f"));
        break;
      default: {
        const char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
        out.append(esc, esc + 6);
      }
    }
    run = ++i;
  }
  flush(i);
  out.push_back('"');
}

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
