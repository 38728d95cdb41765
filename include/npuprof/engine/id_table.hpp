// A hash table from range ids to values, for live metrics' ranges in
// flight: open addressing with linear probing, so that a begin and its end
// cost a probe each and no allocation (std::unordered_map allocates a node
// per range).
#pragma once

#include "../marker/abi.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

/// Range ids (never 0) to values of type V. Grows by doubling.
template <class V>
class id_table {
 public:
  std::size_t size() const noexcept { return size_; }

  /// Takes the value of `id` out of the table into `out`; false when it is
  /// not there.
  bool take(std::uint64_t id, V& out) noexcept {
    if (slots_.empty()) return false;
    for (std::size_t i = home(id);; i = next(i)) {
      if (slots_[i].id == id) {
        out = slots_[i].value;
        erase_at(i);
        return true;
      }
      if (slots_[i].id == 0) return false;
    }
  }

  /// Sets the value of `id` (not 0).
  void put(std::uint64_t id, const V& value) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    std::size_t i = home(id);
    while (slots_[i].id != 0 && slots_[i].id != id) i = next(i);
    if (slots_[i].id == 0) ++size_;
    slots_[i] = {id, value};
  }

  /// Calls f(id, value) for each entry.
  template <class F>
  void for_each(F&& f) const {
    for (const slot& s : slots_) {
      if (s.id != 0) f(s.id, s.value);
    }
  }

  void clear() {
    slots_.clear();
    size_ = 0;
  }

 private:
  struct slot {
    std::uint64_t id = 0;  // 0: empty
    V value{};
  };

  std::size_t home(std::uint64_t id) const noexcept {
    return static_cast<std::size_t>((id * 0x9E3779B97F4A7C15ull) >> 32) & (slots_.size() - 1);
  }
  std::size_t next(std::size_t i) const noexcept { return (i + 1) & (slots_.size() - 1); }

  // Later entries of the probe run move back into the hole, so that no
  // lookup meets an empty slot before its entry.
  void erase_at(std::size_t i) noexcept {
    for (std::size_t j = next(i);; j = next(j)) {
      if (slots_[j].id == 0) break;
      const std::size_t h = home(slots_[j].id);
      // Entry j may fill the hole at i when its home is not in (i, j].
      const bool movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].id = 0;
    --size_;
  }

  void grow() {
    std::vector<slot> old;
    old.swap(slots_);
    slots_.resize(old.empty() ? 1024 : old.size() * 2);
    size_ = 0;
    for (const slot& s : old) {
      if (s.id != 0) put(s.id, s.value);
    }
  }

  std::vector<slot> slots_;  // a power of two long, at most half full
  std::size_t size_ = 0;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
