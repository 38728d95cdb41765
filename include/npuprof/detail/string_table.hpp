// Process-wide table of interned strings: registered strings and the literals
// of the macros live here for the life of the process, so a record can name
// them with a small id instead of copying them.
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace npuprof::detail {

class string_table {
 public:
  string_table() { strings_.emplace_back(); }  // id 0: the empty string

  /// The id of `s`, the same for equal strings. Takes a lock and may allocate:
  /// call it once per string, off the hot path.
  std::uint64_t intern(std::string_view s) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    strings_.emplace_back(s);
    const std::uint64_t id = strings_.size() - 1;
    ids_.emplace(strings_.back(), id);
    return id;
  }

  /// For fork(): held across it so that the child finds it unlocked.
  std::mutex& fork_lock() const noexcept { return mutex_; }

  /// The string of `id`; empty for an id the table never gave out.
  std::string_view lookup(std::uint64_t id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return id < strings_.size() ? std::string_view(strings_[id]) : std::string_view();
  }

 private:
  mutable std::mutex mutex_;
  std::deque<std::string> strings_;  // a deque never moves what it holds
  std::unordered_map<std::string_view, std::uint64_t> ids_;
};

}  // namespace npuprof::detail
