// Process-wide table of domains and the run-time filter that decides which of
// them record. The hot path never looks at this table: it reads the state word
// of its own domain_handle, which this table keeps up to date.
#pragma once

#include "../marker/abi.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "../marker/domain_handle.hpp"
#include "../marker/diagnostics.hpp"
#include "../marker/forward_hook.hpp"
#include "../marker/kept_string.hpp"
#include "mutex.hpp"
#include "../marker/record.hpp"
#include "string_index.hpp"
#include "../domain_filter.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

using ::npuprof::domain_filter;

class domain_table {
 public:
  /// Index of the domain that collects the markers of every domain past the
  /// limit, under the name `over_limit_name`: recorded, not lost.
  static constexpr std::uint32_t over_limit = max_domains - 1;
  static constexpr const char* over_limit_name = "(domains over the limit)";

  domain_table() {
    names_.push_back(keep_copy("default"));
    index_.insert(names_.back(), 0);
  }

  /// Gives `h` its index and its current state. Called once per handle and
  /// module, from the first marker that uses it.
  void register_handle(domain_handle& h) {
    lock_guard<mutex> lock(mutex_);
    if (h.state.load(std::memory_order_relaxed) != domain_handle::unregistered) return;
    const char* name = h.name ? h.name : "";
    const std::uint32_t index = index_of_locked(name);
    handles_.push_back({&h, index, name});
    h.state.store(state_for(index, name), std::memory_order_relaxed);
  }

  /// A handle owned by the table, for domains known only by name at run time.
  domain_handle& runtime_handle(std::string_view name) {
    lock_guard<mutex> lock(mutex_);
    if (const std::uint32_t i = runtime_index_.find(name); i != string_index::missing) return *runtime_[i];
    const std::string_view kept = keep_copy(name);
    auto* h = new domain_handle(kept.data());
    runtime_index_.insert(kept, static_cast<std::uint32_t>(runtime_.size()));
    runtime_.push_back(h);
    const std::uint32_t index = index_of_locked(kept);
    handles_.push_back({h, index, h->name});
    h->state.store(state_for(index, kept), std::memory_order_relaxed);
    return *h;
  }

  /// Distinct domain names past the limit, recorded under over_limit_name.
  std::uint64_t over_limit_count() const {
    lock_guard<mutex> lock(mutex_);
    return over_limit_names_;
  }

  /// Turns recording on or off for every domain, as a session starts or stops.
  void set_recording(bool on) {
    lock_guard<mutex> lock(mutex_);
    recording_ = on;
    refresh_locked();
  }

  /// Replaces the run-time filter; threads that record see the change at
  /// their next marker.
  void set_filter(domain_filter f) {
    lock_guard<mutex> lock(mutex_);
    filter_ = std::move(f);
    refresh_locked();
  }

  domain_filter filter() const {
    lock_guard<mutex> lock(mutex_);
    return filter_;
  }

  /// Sets forward_bit in every recording domain's state, or clears it.
  void set_forwarding(bool on) {
    lock_guard<mutex> lock(mutex_);
    forwarding_ = on;
    refresh_locked();
  }

  /// For fork(): held across it so that the child finds it unlocked.
  mutex& fork_lock() const noexcept { return mutex_; }

  /// The name of domain `index` ("" if none).
  std::string name_of(std::uint32_t index) const {
    lock_guard<mutex> lock(mutex_);
    return index < names_.size() ? std::string(names_[index]) : std::string();
  }

  /// Names of all domains, by index (for the exporters).
  std::vector<std::string> names() const {
    lock_guard<mutex> lock(mutex_);
    return {names_.begin(), names_.end()};
  }

 private:
  struct registered {
    domain_handle* handle;
    std::uint32_t index;
    const char* name;  // the domain's own name, also past the limit (for the filter)
  };
  std::uint32_t index_of_locked(std::string_view name) {
    if (const std::uint32_t i = index_.find(name); i != string_index::missing) return i;
    if (names_.size() >= over_limit) {
      if (over_limit_names_++ == 0) {
        names_.resize(over_limit + 1);
        names_[over_limit] = over_limit_name;
        say("warning: more than %u domains; domain '%.*s' and later ones are recorded as '%s' (counted as "
            "domains_over_limit)",
            over_limit - 1, static_cast<int>(name.size()), name.data(), over_limit_name);
      }
      return over_limit;
    }
    names_.push_back(keep_copy(name));
    index_.insert(names_.back(), static_cast<std::uint32_t>(names_.size() - 1));
    return static_cast<std::uint32_t>(names_.size() - 1);
  }

  std::uint16_t state_for(std::uint32_t index, std::string_view name) const {
    if (!recording_ || !filter_.accepts(name)) return 0;
    return domain_state(index, forwarding_);
  }

  void refresh_locked() {
    for (auto& r : handles_) r.handle->state.store(state_for(r.index, r.name), std::memory_order_relaxed);
  }

  mutable mutex mutex_;
  std::vector<std::string_view> names_;  // by index; each a copy kept for good
  string_index index_;
  std::vector<registered> handles_;
  std::vector<domain_handle*> runtime_;  // handles of run-time domains, kept for good
  string_index runtime_index_;
  domain_filter filter_;
  bool recording_ = false;
  bool forwarding_ = false;
  std::uint64_t over_limit_names_ = 0;
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
