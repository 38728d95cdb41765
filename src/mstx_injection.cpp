// libnpuprof_mstx.so: point MSTX_INJECTION_PATH at it and every mstx call of a
// program (torch_npu, operator libraries, serving engines) goes into an
// npuprof trace, with no rebuild.
//
// On InitInjectionMstx the library starts a session configured from
// NPUPROF_CONFIG and the NPUPROF_* environment, unless the program already
// runs one, and only then fills the CORE and CORE_DOMAIN function tables (and
// CORE_MEM, when the program has it, with functions that accept and ignore):
// a thread that finds npuprof's functions in the table is recorded. The
// session is written when the process exits.
//
// A toolkit mstx library that npuprof forwards to may load this library
// again (it reads MSTX_INJECTION_PATH on its first call): that nested
// InitInjectionMstx declines, and npuprof does not forward to it.
#include <npuprof/session.hpp>
#ifdef NPUPROF_MSTX_DATABASE
#include <npuprof/database.hpp>  // export_type "db"
#endif

#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "mstx_abi.h"

namespace {

using npuprof::detail::domain_handle;

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

// An mstx domain handle: npuprof's domain of that name, and whether the
// program destroyed it. Never freed: a name keeps its handle for the life of
// the process, and creating the name again after a destroy revives it.
struct mstx_domain {
  domain_handle* handle;
  std::atomic<bool> destroyed{false};
};

mstx_domain* as_domain(mstxDomainHandle_t h) { return reinterpret_cast<mstx_domain*>(h); }

// A NULL handle is mstx's default domain (the memory header's globalDomain).
npuprof::runtime_domain from_handle(mstxDomainHandle_t h) {
  return h == nullptr ? default_domain() : npuprof::runtime_domain(*as_domain(h)->handle);
}

// Marks and range starts on a destroyed domain record nothing: counted, and
// the first one said on stderr.
bool destroyed(mstxDomainHandle_t h) {
  if (h == nullptr || !as_domain(h)->destroyed.load(std::memory_order_acquire)) return false;
  npuprof::detail::markers().stats.bump(npuprof::detail::markers().stats.destroyed_domain_calls);
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    npuprof::detail::say("mstx call on destroyed domain '%s' ignored (further ones are counted as "
                         "destroyed_domain_calls)",
                         as_domain(h)->handle->name);
  }
  return true;
}

void mark_a(const char* message, aclrtStream stream) { npuprof::mark(default_domain(), message, stream); }

mstxRangeId range_start_a(const char* message, aclrtStream stream) {
  return npuprof::range_start(default_domain(), message, stream);
}

void range_end(mstxRangeId id) { npuprof::range_end(default_domain(), id); }

void get_tool_id(uint64_t* id) {
  if (id != nullptr) *id = NPUPROF_MSTX_TOOL_ID;
}

mstxDomainHandle_t domain_create_a(const char* name) {
  if (!valid_domain_name(name)) {
    npuprof::detail::markers().stats.bump(npuprof::detail::markers().stats.rejected_domain_names);
    return nullptr;
  }
  static std::mutex mutex;
  static auto* handles = new std::map<std::string, mstx_domain*>();
  try {
    std::lock_guard<std::mutex> lock(mutex);
    mstx_domain*& d = (*handles)[name];
    if (d == nullptr) d = new mstx_domain{&npuprof::domain_by_name(name).handle()};
    d->destroyed.store(false, std::memory_order_release);
    return reinterpret_cast<mstxDomainHandle_t>(d);
  } catch (...) {
    return nullptr;
  }
}

void domain_destroy(mstxDomainHandle_t domain) {
  if (domain != nullptr) as_domain(domain)->destroyed.store(true, std::memory_order_release);
}

void domain_mark_a(mstxDomainHandle_t domain, const char* message, aclrtStream stream) {
  if (!destroyed(domain)) npuprof::mark(from_handle(domain), message, stream);
}

mstxRangeId domain_range_start_a(mstxDomainHandle_t domain, const char* message, aclrtStream stream) {
  return destroyed(domain) ? 0 : npuprof::range_start(from_handle(domain), message, stream);
}

// Ranges begun before the destroy still end.
void domain_range_end(mstxDomainHandle_t domain, mstxRangeId id) { npuprof::range_end(from_handle(domain), id); }

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

npuprof::session* g_session = nullptr;

void start_session() {
  if (npuprof::detail::state().active.load() != nullptr) return;  // the program runs its own
  try {
    g_session = new npuprof::session(npuprof::config::from_env());  // written at exit
    g_session->start();
    npuprof::detail::say("capturing mstx markers; the trace is written at exit");
  } catch (const std::exception& e) {
    npuprof::detail::say("mstx capture not started: %s", e.what());
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
  module_table core, domain, mem;
  const bool has_core = core.get(get, MSTX_API_MODULE_CORE, 4);
  const bool has_domain = has_core && domain.get(get, MSTX_API_MODULE_CORE_DOMAIN, 5);
  if (!has_core || !has_domain) {
    npuprof::detail::say("mstx injection failed: the program's %s function table is missing or too small",
                         !has_core ? "CORE" : "CORE_DOMAIN");
    return MSTX_FAIL;
  }
  npuprof::detail::mstx_loops().add_injector(reinterpret_cast<const void*>(get));
  start_session();  // before the tables: every call that reaches npuprof is recorded
  core.fill({fn(&mark_a), fn(&range_start_a), fn(&range_end), fn(&get_tool_id)});
  domain.fill({fn(&domain_create_a), fn(&domain_destroy), fn(&domain_mark_a), fn(&domain_range_start_a),
               fn(&domain_range_end)});
  // Optional: programs built with an mstx header without memory tools have no CORE_MEM table.
  if (mem.get(get, MSTX_API_MODULE_CORE_MEM, 4)) {
    mem.fill({fn(&mem_heap_register), fn(&mem_ignore), fn(&mem_ignore), fn(&mem_ignore)});
  }
  return MSTX_SUCCESS;
}
