// What markers accept as a message: a registered string (recorded by id) or
// any text (copied into the buffer, bounded, when recorded).
#pragma once

#include "abi.hpp"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "../registered_string.hpp"
#include "marker_state.hpp"
#include "record.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

class message {
 public:
  message(const char* s) noexcept : text_(s), length_(unknown_length) {}
  message(std::string_view s) noexcept : text_(s.data()), length_(s.size()) {}
  message(const std::string& s) noexcept : text_(s.data()), length_(s.size()) {}
  template <class D>
  message(const registered_string<D>& r) noexcept : text_(nullptr), length_(registered), id_(r.id()) {}

  bool is_registered() const noexcept { return length_ == registered; }
  std::uint64_t id() const noexcept { return id_; }
  const char* text() const noexcept { return text_ != nullptr ? text_ : ""; }

  /// Bytes to copy: at most max_message, cut at a UTF-8 character boundary.
  /// Null text and truncation are counted.
  std::size_t copy_length() const noexcept {
    if (text_ == nullptr) {
      markers().stats.bump(markers().stats.null_messages);
      return 0;
    }
    std::size_t n = length_ == unknown_length ? ::strnlen(text_, max_message + 1) : length_;
    if (NPUPROF_LIKELY(n <= max_message)) return n;
    markers().stats.bump(markers().stats.truncated_messages);
    n = max_message;
    while (n > 0 && (static_cast<unsigned char>(text_[n]) & 0xC0) == 0x80) --n;
    return n;
  }

 private:
  static constexpr std::size_t unknown_length = SIZE_MAX;
  static constexpr std::size_t registered = SIZE_MAX - 1;

  const char* text_;
  std::size_t length_;
  std::uint64_t id_ = 0;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
