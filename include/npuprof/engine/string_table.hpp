// Process-wide table of interned strings: registered strings and the literals
// of the macros live here for the life of the process, so a record can name
// them with a small id instead of copying them.
#pragma once

#include "../marker/abi.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

#include "../marker/kept_string.hpp"
#include "mutex.hpp"
#include "../marker/pending.hpp"
#include "string_index.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

class string_table {
 public:
  string_table() {  // id 0: the empty string
    strings_.push_back(keep_copy(""));
    ids_.insert(strings_[0], 0);
  }

  /// The id of `s`, the same for equal strings. Takes a lock and may allocate:
  /// call it once per string, off the hot path.
  std::uint64_t intern(std::string_view s) {
    lock_guard<mutex> lock(mutex_);
    if (const std::uint32_t id = ids_.find(s); id != string_index::missing) return id;
    const std::string_view kept = keep_copy(s);
    const auto id = static_cast<std::uint32_t>(strings_.size());
    strings_.push_back(kept);
    ids_.insert(kept, id);
    return id;
  }

  /// For fork(): held across it so that the child finds it unlocked.
  mutex& fork_lock() const noexcept { return mutex_; }

  /// The string of `id`; empty for an id the table never gave out. The view
  /// stays valid for the life of the process.
  std::string_view lookup(std::uint64_t id) const {
    lock_guard<mutex> lock(mutex_);
    if ((id & pending_string_bit) != 0) {
      const std::uint64_t n = id & ~pending_string_bit;
      if (n >= pending_ids_.size()) return {};
      id = pending_ids_[n];
    }
    return id < strings_.size() ? strings_[id] : std::string_view();
  }

  /// Takes over a string registered before the table was installed: its
  /// pending id now names the same string as its interned id.
  void adopt(std::uint64_t pending_id, std::string_view s) {
    const std::uint64_t id = intern(s);
    lock_guard<mutex> lock(mutex_);
    const std::uint64_t n = pending_id & ~pending_string_bit;
    if (pending_ids_.size() <= n) pending_ids_.resize(n + 1, 0);
    pending_ids_[n] = id;
  }

 private:
  mutable mutex mutex_;
  std::vector<std::string_view> strings_;  // by id; each a copy kept for good
  string_index ids_;
  std::vector<std::uint64_t> pending_ids_;  // interned id of each pending id
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
