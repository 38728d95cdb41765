// The domain handles the mstx ABI hands out. Each is the address of an entry
// in one fixed array, so a handle is checked by its address alone: one that
// mstxDomainCreateA did not return (from the stack, the heap, a small
// integer, another tool) is recognised without being read, never a crash.
#pragma once

#include <npuprof/domain.hpp>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace npuprof_mstx {

/// An mstx domain: npuprof's domain of that name, and whether the program
/// destroyed it. A name keeps its entry for the life of the process, and
/// creating the name again after a destroy revives it.
struct domain {
  npuprof::detail::domain_handle* handle = nullptr;
  std::atomic<bool> destroyed{false};
};

class domains {
 public:
  /// Distinct mstx domain names a process can create.
  static constexpr std::uint32_t capacity = std::uint32_t{1} << 16;

  /// The entry of `name` (a valid mstx name), made on first use; null when
  /// `capacity` names exist already, or memory ran out.
  domain* create(const char* name) noexcept {
    try {
      std::lock_guard<std::mutex> lock(mutex_);
      if (by_name_ == nullptr) by_name_ = new std::map<std::string, domain*>();  // never freed, as the entries
      domain*& d = (*by_name_)[name];
      if (d == nullptr) {
        const std::uint32_t n = used_.load(std::memory_order_relaxed);
        if (n == capacity) {
          by_name_->erase(name);
          return nullptr;
        }
        entries_[n].handle = &npuprof::domain_by_name(name).handle();
        d = &entries_[n];
        used_.store(n + 1, std::memory_order_release);  // the entry is complete before it is found
      }
      d->destroyed.store(false, std::memory_order_release);
      return d;
    } catch (...) {
      return nullptr;
    }
  }

  /// Held across fork(), so that a child never finds it held by a thread it
  /// does not have.
  std::mutex& fork_lock() noexcept { return mutex_; }

  /// The entry `h` points at, or null for an address that is not an entry
  /// create() returned. Only the address is compared: `h` is never read.
  domain* find(const void* h) const noexcept {
    const auto at = reinterpret_cast<std::uintptr_t>(h);
    const auto first = reinterpret_cast<std::uintptr_t>(&entries_[0]);
    if (at < first) return nullptr;
    const std::uintptr_t offset = at - first;
    if (offset % sizeof(domain) != 0 || offset / sizeof(domain) >= used_.load(std::memory_order_acquire))
      return nullptr;
    return const_cast<domain*>(&entries_[offset / sizeof(domain)]);
  }

 private:
  std::mutex mutex_;
  std::map<std::string, domain*>* by_name_ = nullptr;
  std::atomic<std::uint32_t> used_{0};
  domain entries_[capacity];
};

}  // namespace npuprof_mstx
