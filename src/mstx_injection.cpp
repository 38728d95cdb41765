// libnpuprof_mstx.so: point MSTX_INJECTION_PATH at it and every mstx call of a
// program (torch_npu, operator libraries, serving engines) goes into an
// npuprof trace, with no rebuild.
//
// On InitInjectionMstx the library starts a session configured from
// NPUPROF_CONFIG and the NPUPROF_* environment, unless the program already
// runs one, and only then fills the CORE and CORE_DOMAIN function tables (and
// CORE_MEM, when the program has it, with functions that accept and ignore):
// a thread that finds npuprof's functions in the table is recorded. The
// session is written when the process exits, after the program's exit
// handlers; a fork() child that makes mstx calls writes its own. Range ids
// are 32-bit (mstx_range_ids.hpp), domain handles checked by address
// (mstx_domains.hpp).
//
// A toolkit mstx library that npuprof forwards to may load this library
// again (it reads MSTX_INJECTION_PATH on its first call): that nested
// InitInjectionMstx declines, and npuprof does not forward to it.
#define NPUPROF_IMPLEMENTATION  // the one file that compiles the implementation
#include <npuprof/session.hpp>
#ifdef NPUPROF_MSTX_DATABASE
#include <npuprof/database.hpp>  // export_type "db"
#endif

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "mstx_abi.h"
#include "mstx_domains.hpp"
#include "mstx_range_ids.hpp"

namespace {

using npuprof::detail::markers;
using npuprof::detail::say;

constexpr std::size_t max_domain_name = 1023;

/// mstx's rule for domain names: 1 to 1023 bytes of letters, digits and '_';
/// "default" is reserved.
bool valid_domain_name(const char* name) {
  if (name == nullptr || name[0] == '\0') return false;
  std::size_t n = 0;
  for (const char* p = name; *p != '\0'; ++p, ++n) {
    const char c = *p;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok || n >= max_domain_name) return false;
  }
  return std::strcmp(name, "default") != 0;
}

npuprof::runtime_domain default_domain() {
  static const npuprof::runtime_domain d = npuprof::domain_by_name("default");
  return d;
}

// Both constant-initialized (zero pages until used) and never destroyed:
// mstx calls may come while the process exits.
npuprof_mstx::domains g_domains;
npuprof_mstx::range_ids g_ranges;

// Where this process stands: each call that records reads it once.
enum phase : int {
  recording,       // as the program runs
  child_to_start,  // a fork() child whose first mstx call starts its own session
  written,         // the trace was written at exit: a call now is counted, not recorded
};
std::atomic<int> g_phase{recording};

bool may_record_slow(int p);

/// Whether an mstx call may record now (it may start a fork() child's session).
inline bool may_record() {
  const int p = g_phase.load(std::memory_order_acquire);
  return NPUPROF_LIKELY(p == recording) || may_record_slow(p);
}

// A handle mstxDomainCreateA did not return: counted, the first said.
void count_foreign_handle() {
  markers().stats.bump(markers().stats.foreign_domain_handles);
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    say("mstx call with a domain handle that is not a handle mstxDomainCreateA returned: ignored (further ones "
        "are counted as foreign_domain_handles)");
  }
}

// Marks and range starts on a destroyed domain: counted, the first said.
void count_destroyed(const npuprof_mstx::domain& d) {
  markers().stats.bump(markers().stats.destroyed_domain_calls);
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    say("mstx call on destroyed domain '%s' ignored (further ones are counted as destroyed_domain_calls)",
        d.handle->name);
  }
}

/// The domain `h` names, or null when a mark or range start in it records
/// nothing (destroyed, or not a handle of ours). NULL is mstx's default
/// domain (the memory header's globalDomain).
npuprof::detail::domain_handle* recording_domain(mstxDomainHandle_t h) {
  if (h == nullptr) return &default_domain().handle();
  npuprof_mstx::domain* d = g_domains.find(h);
  if (d == nullptr) {
    count_foreign_handle();
    return nullptr;
  }
  if (d->destroyed.load(std::memory_order_acquire)) {
    count_destroyed(*d);
    return nullptr;
  }
  return d->handle;
}

// A range begun with no 32-bit id free: recorded, but it cannot be ended.
void count_over_limit() {
  markers().stats.bump(markers().stats.mstx_ranges_over_limit);
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    say("no mstx range id free (%u mstx ranges are open at most): a range begun now is recorded but returns 0 "
        "and stays open (counted as mstx_ranges_over_limit)",
        static_cast<unsigned>(npuprof_mstx::range_ids::places));
  }
}

mstxRangeId start_range(npuprof::detail::domain_handle& d, const char* message, aclrtStream stream) {
  const npuprof::range_id id = npuprof::range_start(npuprof::runtime_domain(d), message, stream);
  if (id == 0) return 0;
  const std::uint32_t mstx = g_ranges.open(id, stream);
  if (mstx == 0) count_over_limit();
  return mstx;
}

// The range's device end goes on the stream its begin was tied to.
void end_range(npuprof::detail::domain_handle& d, mstxRangeId mstx) {
  if (mstx == 0) return;
  const npuprof_mstx::range_ids::range r = g_ranges.close(mstx);
  npuprof::range_end(npuprof::runtime_domain(d), r.id, r.stream);
}

void mark_a(const char* message, aclrtStream stream) {
  if (may_record()) npuprof::mark(default_domain(), message, stream);
}

mstxRangeId range_start_a(const char* message, aclrtStream stream) {
  return may_record() ? start_range(default_domain().handle(), message, stream) : 0;
}

void range_end(mstxRangeId id) {
  if (may_record()) end_range(default_domain().handle(), id);
}

void get_tool_id(uint64_t* id) {
  if (id != nullptr) *id = NPUPROF_MSTX_TOOL_ID;
}

mstxDomainHandle_t domain_create_a(const char* name) {
  if (!valid_domain_name(name)) {
    markers().stats.bump(markers().stats.rejected_domain_names);
    return nullptr;
  }
  npuprof_mstx::domain* d = g_domains.create(name);
  if (d == nullptr) {
    markers().stats.bump(markers().stats.rejected_domain_names);
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) {
      say("mstx domain '%s' not created: %u mstx domains exist already (further ones are counted as "
          "rejected_domain_names)",
          name, static_cast<unsigned>(npuprof_mstx::domains::capacity));
    }
  }
  return reinterpret_cast<mstxDomainHandle_t>(d);
}

void domain_destroy(mstxDomainHandle_t h) {
  if (h == nullptr) return;
  if (npuprof_mstx::domain* d = g_domains.find(h)) {
    d->destroyed.store(true, std::memory_order_release);
  } else {
    count_foreign_handle();
  }
}

void domain_mark_a(mstxDomainHandle_t h, const char* message, aclrtStream stream) {
  if (!may_record()) return;
  if (npuprof::detail::domain_handle* d = recording_domain(h))
    npuprof::mark(npuprof::runtime_domain(*d), message, stream);
}

mstxRangeId domain_range_start_a(mstxDomainHandle_t h, const char* message, aclrtStream stream) {
  if (!may_record()) return 0;
  npuprof::detail::domain_handle* d = recording_domain(h);
  return d == nullptr ? 0 : start_range(*d, message, stream);
}

// Ranges begun before their domain's destroy still end; so does one ended
// through a handle that is not ours (in the default domain: the range is
// found by its id).
void domain_range_end(mstxDomainHandle_t h, mstxRangeId id) {
  if (!may_record()) return;
  npuprof::detail::domain_handle* d = &default_domain().handle();
  if (h != nullptr) {
    if (npuprof_mstx::domain* found = g_domains.find(h)) {
      d = found->handle;
    } else {
      count_foreign_handle();
    }
  }
  end_range(*d, id);
}

// Memory-tool calls are accepted and ignored. A heap registration gets a
// non-null handle back, so that callers do not take it for a failure.
int g_heap_token = 0;
void* mem_heap_register(void*, const void*) { return &g_heap_token; }
void mem_ignore(void*, const void*) {}

template <class F>
mstxFuncPointer fn(F f) {
  return reinterpret_cast<mstxFuncPointer>(f);
}

/// A module's table, asked for once: usable when it has `slots` slots past
/// slot 0, each with a place to store a function.
struct module_table {
  mstxFuncTable table = nullptr;
  unsigned size = 0;

  bool get(mstxGetModuleFuncTableFunc getter, int module, std::size_t slots) {
    if (getter(module, &table, &size) != MSTX_SUCCESS || table == nullptr || size < slots + 1) return false;
    for (unsigned slot = 1; slot <= slots; ++slot) {
      if (table[slot] == nullptr) return false;
    }
    return true;
  }

  // Other threads may call through the table as soon as a slot is stored.
  void fill(std::initializer_list<mstxFuncPointer> slots) const {
    unsigned slot = 1;
    for (mstxFuncPointer f : slots) __atomic_store_n(table[slot++], f, __ATOMIC_RELEASE);
  }
};

// --- the session: started on the first mstx call, written at exit --------

npuprof::session* g_session = nullptr;          // null: none of ours runs in this process
npuprof::session* g_parents_session = nullptr;  // in a fork() child: never written here, never freed

// npuprof-run names a file where each trace written is noted, a line each.
void note_trace(const std::filesystem::path& dir) {
  const char* list = std::getenv("NPUPROF_RUN_TRACE_LIST");
  if (list == nullptr || list[0] == '\0') return;
  const int fd = ::open(list, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  const std::string line = dir.string() + "\n";
  (void)!::write(fd, line.data(), line.size());  // one write: lines of processes that fork do not mix
  ::close(fd);
}

void start_session() {
  npuprof::detail::process_state& st = npuprof::detail::state();
  if (st.active.load() != nullptr) return;  // the program runs its own
  try {
    npuprof::config cfg = npuprof::config::from_env();
    cfg.on_trace_ready = &note_trace;
    g_session = new npuprof::session(std::move(cfg));  // written at exit, never freed
    g_session->start();
    st.exit_write_deferred.store(true, std::memory_order_release);
    say("capturing mstx markers; the trace is written at exit");
  } catch (const std::exception& e) {
    g_session = nullptr;
    say("mstx capture not started: %s", e.what());
  }
}

// In a fork() child, npuprof's own handler has let go of the parent's session
// (the child has none of its threads). The child gets its own session, with
// its pid in the output directory's name, on its first mstx call: a child
// that only execs or exits starts nothing.
std::atomic<int> g_child_start{0};  // 0: not started, 1: starting, 2: started

void before_fork() noexcept { g_domains.fork_lock().lock(); }

void after_fork_in_parent() noexcept { g_domains.fork_lock().unlock(); }

void after_fork_in_child() noexcept {
  g_domains.fork_lock().unlock();
  if (g_session == nullptr) return;
  g_parents_session = g_session;
  g_session = nullptr;
  g_child_start.store(0, std::memory_order_relaxed);
  g_phase.store(child_to_start, std::memory_order_release);
}

void start_in_child() {
  int expected = 0;
  if (g_child_start.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
    start_session();
    int starting = child_to_start;  // unless the child is exiting already
    g_phase.compare_exchange_strong(starting, recording, std::memory_order_acq_rel);
    g_child_start.store(2, std::memory_order_release);
    return;
  }
  while (g_child_start.load(std::memory_order_acquire) != 2) std::this_thread::yield();
}

bool may_record_slow(int p) {
  if (p == child_to_start) {
    start_in_child();
    return true;
  }
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    say("mstx call after the trace was written at exit: not in the trace (from a destructor that runs later, or a "
        "thread still running)");
  }
  return false;
}

// An ELF destructor of this library runs after every atexit() handler and
// static destructor of the program, so markers made from those are in the
// trace. Calls that still come (from destructors of libraries finalized
// after this one, or threads still running) are said.
__attribute__((destructor)) void write_at_exit() {
  if (g_session == nullptr) return;
  g_phase.store(written, std::memory_order_release);
  npuprof::detail::stop_active_session_for("exit");
}

// The tables point into this library: it must never be unloaded, and its
// destructor must run at exit, not at a dlclose().
void keep_loaded() {
  Dl_info self{};
  if (::dladdr(reinterpret_cast<const void*>(&write_at_exit), &self) != 0 && self.dli_fname != nullptr) {
    ::dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitInjectionMstx(mstxGetModuleFuncTableFunc get) {
  if (get == nullptr) return MSTX_FAIL;
  // Loaded again by the mstx library npuprof is opening to forward to: that
  // library would hand the forwarded markers back, so it gets no tool.
  if (npuprof::detail::mstx_opening_forward_target()) {
    npuprof::detail::mstx_injection_reentered() = true;
    return MSTX_FAIL;
  }
  struct {
    module_table core, domain;
  } tables;
  const bool has_core = tables.core.get(get, MSTX_API_MODULE_CORE, 4);
  const bool has_domain = has_core && tables.domain.get(get, MSTX_API_MODULE_CORE_DOMAIN, 5);
  if (!has_core || !has_domain) {
    say("mstx injection failed: the program's %s function table is missing or too small",
        !has_core ? "CORE" : "CORE_DOMAIN");
    return MSTX_FAIL;
  }
  npuprof::detail::mstx_loops().add_injector(reinterpret_cast<const void*>(get));
  // Once, though every module built with the mstx header brings its own tables.
  static const bool started = [] {
    keep_loaded();
    start_session();  // before the tables: every call that reaches npuprof is recorded
    // Registered after npuprof's own: the child's handler runs after npuprof's,
    // and the lock is taken before npuprof's (in the order create() takes them).
    ::pthread_atfork(&before_fork, &after_fork_in_parent, &after_fork_in_child);
    return true;
  }();
  (void)started;
  tables.core.fill({fn(&mark_a), fn(&range_start_a), fn(&range_end), fn(&get_tool_id)});
  tables.domain.fill({fn(&domain_create_a), fn(&domain_destroy), fn(&domain_mark_a), fn(&domain_range_start_a),
                      fn(&domain_range_end)});
  module_table mem;
  // Optional: programs built with an mstx header without memory tools have no CORE_MEM table.
  if (mem.get(get, MSTX_API_MODULE_CORE_MEM, 4)) {
    mem.fill({fn(&mem_heap_register), fn(&mem_ignore), fn(&mem_ignore), fn(&mem_ignore)});
  }
  return MSTX_SUCCESS;
}
