// The control side's process-wide state: the tables of domains, strings,
// threads and stream names, and the function table through which the marker
// layer reaches them (see marker_state.hpp).
#pragma once

#include "../marker/abi.hpp"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../marker/buffer.hpp"
#include "../clock.hpp"
#include "../marker/abi_check.hpp"
#include "domain_table.hpp"
#include "../marker/marker_state.hpp"
#include "mutex.hpp"
#include "../marker/pending.hpp"
#include "../marker/platform.hpp"
#include "../marker/prefetch.hpp"
#include "string_table.hpp"
#include "../marker/thread_buffer.hpp"
#include "thread_registry.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {
class session_core;
}
NPUPROF_ABI_END
}  // namespace npuprof

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

void on_thread_exit(void* buffer) noexcept;

/// Names users gave to device streams (few, set rarely: a list will do).
class stream_names {
 public:
  void set(void* stream, std::string name) {
    lock_guard<mutex> lock(mutex_);
    for (auto& entry : names_) {
      if (entry.first == stream) {
        entry.second = std::move(name);
        return;
      }
    }
    names_.emplace_back(stream, std::move(name));
  }
  std::vector<std::pair<void*, std::string>> all() const {
    lock_guard<mutex> lock(mutex_);
    return names_;
  }

 private:
  mutable mutex mutex_;
  std::vector<std::pair<void*, std::string>> names_;
};

struct process_state {
  process_state() : threads(&on_thread_exit), origin(sample_clock()) {}

  domain_table domains;
  string_table strings;
  thread_registry threads;
  stream_names streams;
  /// The first clock point of the process: the far end of every calibration.
  clock_point origin;

  /// Serialises session start, stop, dumps and drains.
  recursive_mutex control;
  std::atomic<session_core*> active{nullptr};
  bool exit_hook_installed = false;
  /// Set by the mstx injection library, which writes its session after
  /// every exit handler of the program ran (from its ELF destructor).
  std::atomic<bool> exit_write_deferred{false};
  /// What the marker layer kept before the control table was installed.
  std::vector<pending_entry*> adopted;
  mutex adopt_mutex;
};

/// The process-wide state. It is never destroyed, so that threads still
/// recording while the process exits never touch a dead object.
NPUPROF_PROCESS_WIDE inline process_state& state() {
  static process_state* s = new process_state();
  return *s;
}

// --- the control table's entries ---------------------------------------------

inline thread_buffer* register_thread() noexcept {
  process_state& s = state();
  const std::uint32_t tid = os_thread_id();
  thread_buffer* tb = nullptr;
  try {
    tb = s.threads.acquire(tid);
    char name[64] = {};
    if (const char* given = t_pending_thread_name) {
      s.threads.set_name(tid, given);
      t_pending_thread_name = nullptr;
      delete[] given;
    } else if (::pthread_getname_np(::pthread_self(), name, sizeof name) == 0 && name[0] != '\0') {
      s.threads.set_name(tid, name);
    }
  } catch (...) {
    return nullptr;
  }
  ::pthread_setspecific(s.threads.key(), tb);
  t_buffer = tb;
  return tb;
}

/// Runs when a thread that recorded exits: its last chunk goes to the drainer
/// so that none of its events are lost, and its buffer becomes reusable.
inline void on_thread_exit(void* buffer) noexcept {
  auto* tb = static_cast<thread_buffer*>(buffer);
  // A chunk exists only once the pool that made it is installed.
  if (tb->current.load(std::memory_order_relaxed) != nullptr) {
    hand_over_current(tb, *markers().chunks.load(std::memory_order_acquire));
  }
  tb->write = tb->limit = nullptr;
  if (t_buffer == tb) t_buffer = nullptr;
  try {
    state().threads.release(tb);
  } catch (...) {
  }
}

inline std::uint16_t register_domain(domain_handle& h) noexcept {
  try {
    state().domains.register_handle(h);
  } catch (...) {
    return 0;
  }
  return h.state.load(std::memory_order_relaxed);
}

inline domain_handle& runtime_domain_handle(std::string_view name) { return state().domains.runtime_handle(name); }

inline std::uint64_t intern_string(std::string_view s) { return state().strings.intern(s); }

inline std::string_view lookup_string(std::uint64_t id) { return state().strings.lookup(id); }

inline void name_this_thread(std::string_view name) {
  if (thread_buffer* tb = register_this_thread()) state().threads.set_name(tb->tid, std::string(name));
}

inline void set_stream_name(stream_t stream, std::string_view name) { state().streams.set(stream, std::string(name)); }

/// Takes over the strings and stream names given before the table was
/// installed, oldest first.
/// Under a lock even when there is nothing to take: a thread that pushed an
/// entry the installer took must wait until it is taken over.
inline void adopt_pending() {
  process_state& s = state();
  lock_guard<mutex> lock(s.adopt_mutex);
  std::vector<pending_entry*> taken;
  for (pending_entry* e = g_pending.head.exchange(nullptr, std::memory_order_seq_cst); e != nullptr; e = e->next) {
    taken.push_back(e);
  }
  for (auto it = taken.rbegin(); it != taken.rend(); ++it) {
    const pending_entry& e = **it;
    switch (e.what) {
      case pending_entry::kind::string:
        s.strings.adopt(e.id, e.text);
        break;
      case pending_entry::kind::stream_name:
        s.streams.set(e.stream, std::string(e.text));
        break;
      case pending_entry::kind::domain:
        // Off since it was deferred: registered now like a new handle.
        e.handle->state.store(domain_handle::unregistered, std::memory_order_relaxed);
        s.domains.register_handle(*e.handle);
        break;
    }
  }
  // Kept, not freed: a thread may still be reading the list it found
  // before the table was installed.
  s.adopted.insert(s.adopted.end(), taken.begin(), taken.end());
}

inline constexpr control_table control_entries{
    &register_thread, &register_domain,  &runtime_domain_handle, &intern_string,
    &lookup_string,   &name_this_thread, &set_stream_name,       &adopt_pending,
};

/// Makes the control side reachable from the marker layer. The first call in
/// the process installs the table; later ones (other shared objects
/// included) find it there.
inline void install_control_table() {
  marker_state& m = markers();
  if (m.control.load(std::memory_order_acquire) != nullptr) return;
  if (!claim_process_abi()) return;  // said on stderr; a session here refuses to start
  m.can_prefetch.store(can_prefetch_for_write(), std::memory_order_relaxed);
  const control_table* expected = nullptr;
  if (!m.control.compare_exchange_strong(expected, &control_entries, std::memory_order_seq_cst)) return;
  // The table (and later the chunk pool) is code of this module: a module
  // loaded with dlopen that installed it must never be unloaded.
  Dl_info self{};
  if (::dladdr(reinterpret_cast<const void*>(&control_entries), &self) != 0 && self.dli_fname != nullptr) {
    ::dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
  adopt_pending();
}

/// Every file that includes the control side installs the table while the
/// program starts (or its shared object loads), before markers need it.
inline const bool control_table_installed = (install_control_table(), true);

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
