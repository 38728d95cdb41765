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

// The streams of open stream-tied ranges, by range id: mstxRangeEnd has no
// stream argument, and a range's device end is recorded on its begin's
// stream. Lock-free, of fixed size: a range that finds no room within a few
// slots of its id's place ends on the host only, and its device begin is
// counted (device_unpaired) instead of drawn. While none is open (most
// programs, most of the time) an end costs one load, not a search.
class range_streams {
 public:
  bool put(std::uint64_t id, void* stream) noexcept {
    for (std::size_t i = 0; i < probes; ++i) {
      slot& s = table_[(place(id) + i) & (slots - 1)];
      std::uint64_t free = 0;
      if (s.id.load(std::memory_order_relaxed) == 0 && s.id.compare_exchange_strong(free, id, std::memory_order_acq_rel)) {
        // Read only after the range's start returned its id.
        s.stream.store(stream, std::memory_order_release);
        open_.fetch_add(1, std::memory_order_release);  // before the id is returned, so before its end
        return true;
      }
    }
    return false;
  }

  /// The stream `id` began on, forgotten; null for a range tied to none
  /// (or ended already).
  void* take(std::uint64_t id) noexcept {
    if (open_.load(std::memory_order_acquire) == 0) return nullptr;
    for (std::size_t i = 0; i < probes; ++i) {
      slot& s = table_[(place(id) + i) & (slots - 1)];
      if (s.id.load(std::memory_order_acquire) != id) continue;
      void* stream = s.stream.load(std::memory_order_acquire);
      std::uint64_t mine = id;  // one of two racing ends frees the slot
      if (!s.id.compare_exchange_strong(mine, 0, std::memory_order_acq_rel)) return nullptr;
      open_.fetch_sub(1, std::memory_order_relaxed);
      return stream;
    }
    return nullptr;
  }

 private:
  static constexpr std::size_t slots = std::size_t{1} << 15;  // open stream-tied ranges at once, about
  static constexpr std::size_t probes = 16;
  struct slot {
    std::atomic<std::uint64_t> id{0};
    std::atomic<void*> stream{nullptr};
  };
  static std::size_t place(std::uint64_t id) noexcept {
    return static_cast<std::size_t>((id * 0x9e3779b97f4a7c15ull) >> 40);
  }
  alignas(64) std::atomic<std::uint64_t> open_{0};  // stream-tied ranges in the table
  alignas(64) slot table_[slots];
};

range_streams& open_streams() {
  static range_streams* table = new range_streams();  // never destroyed: ends may come during exit
  return *table;
}

mstxRangeId start_tied(npuprof::runtime_domain d, const char* message, aclrtStream stream) {
  const mstxRangeId id = npuprof::range_start(d, message, stream);
  if (id != 0 && stream != nullptr) open_streams().put(id, stream);
  return id;
}

void end_tied(npuprof::runtime_domain d, mstxRangeId id) {
  if (id != 0) npuprof::range_end(d, id, open_streams().take(id));
}

void mark_a(const char* message, aclrtStream stream) { npuprof::mark(default_domain(), message, stream); }

mstxRangeId range_start_a(const char* message, aclrtStream stream) { return start_tied(default_domain(), message, stream); }

void range_end(mstxRangeId id) { end_tied(default_domain(), id); }

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
  return destroyed(domain) ? 0 : start_tied(from_handle(domain), message, stream);
}

// Ranges begun before the destroy still end.
void domain_range_end(mstxDomainHandle_t domain, mstxRangeId id) { end_tied(from_handle(domain), id); }

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
