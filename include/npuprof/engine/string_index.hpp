// An index from strings to small numbers, for the tables of interned strings
// and domain names: open addressing over a power-of-two array, grown when
// half full, so that a lookup or an insertion costs a hash and a probe or two
// however many strings there are. The strings themselves live elsewhere and
// never move.
#pragma once

#include "../marker/abi.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

class string_index {
 public:
  static constexpr std::uint32_t missing = ~std::uint32_t{0};

  /// The value stored for `key`, or `missing`.
  std::uint32_t find(std::string_view key) const noexcept {
    if (slots_.empty()) return missing;
    for (std::size_t i = hash(key) & mask();; i = (i + 1) & mask()) {
      const slot& s = slots_[i];
      if (s.value == missing) return missing;
      if (s.key == key) return s.value;
    }
  }

  /// Stores `value` for `key`, which is not in the index yet and whose
  /// characters stay where they are for the life of the index.
  void insert(std::string_view key, std::uint32_t value) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    place(slots_, key, value);
    ++used_;
  }

 private:
  struct slot {
    std::string_view key;
    std::uint32_t value = missing;
  };

  static std::size_t hash(std::string_view key) noexcept {
    std::uint64_t h = 14695981039346656037ull;  // FNV-1a
    for (char c : key) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    return static_cast<std::size_t>(h ^ (h >> 32));
  }

  std::size_t mask() const noexcept { return slots_.size() - 1; }

  static void place(std::vector<slot>& slots, std::string_view key, std::uint32_t value) noexcept {
    const std::size_t m = slots.size() - 1;
    std::size_t i = hash(key) & m;
    while (slots[i].value != missing) i = (i + 1) & m;
    slots[i] = {key, value};
  }

  void grow() {
    std::vector<slot> bigger(slots_.empty() ? 64 : 2 * slots_.size());
    for (const slot& s : slots_) {
      if (s.value != missing) place(bigger, s.key, s.value);
    }
    slots_.swap(bigger);
  }

  std::vector<slot> slots_;
  std::size_t used_ = 0;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
