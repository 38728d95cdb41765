// libnpuprof_mstx.so: point MSTX_INJECTION_PATH at it and every mstx call of a
// program (torch_npu, operator libraries, serving engines) goes into an
// npuprof trace, with no rebuild.
//
// On InitInjectionMstx the library fills the CORE and CORE_DOMAIN function
// tables (and CORE_MEM, when the program has it, with functions that accept
// and ignore), then starts a session configured from NPUPROF_CONFIG and the
// NPUPROF_* environment, unless the program already runs one. The session is
// written when the process exits.
#include <npuprof/npuprof.hpp>

#include <cstdio>
#include <cstring>

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

npuprof::runtime_domain from_handle(mstxDomainHandle_t h) {
  return npuprof::runtime_domain(*reinterpret_cast<domain_handle*>(h));
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
    npuprof::detail::state().stats.bump(npuprof::detail::state().stats.rejected_domain_names);
    return nullptr;
  }
  try {
    return reinterpret_cast<mstxDomainHandle_t>(&npuprof::domain_by_name(name).handle());
  } catch (...) {
    return nullptr;
  }
}

// Domains live as long as the process (a name always maps to the same
// handle), so destroying one has nothing to free.
void domain_destroy(mstxDomainHandle_t) {}

void domain_mark_a(mstxDomainHandle_t domain, const char* message, aclrtStream stream) {
  if (domain != nullptr) npuprof::mark(from_handle(domain), message, stream);
}

mstxRangeId domain_range_start_a(mstxDomainHandle_t domain, const char* message, aclrtStream stream) {
  return domain != nullptr ? npuprof::range_start(from_handle(domain), message, stream) : 0;
}

void domain_range_end(mstxDomainHandle_t domain, mstxRangeId id) {
  if (domain != nullptr) npuprof::range_end(from_handle(domain), id);
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

/// Asks for module `module`'s table and fills `slots`; false when the table is
/// missing or has fewer slots than we fill.
bool fill(mstxGetModuleFuncTableFunc get, int module, std::initializer_list<mstxFuncPointer> slots) {
  mstxFuncTable table = nullptr;
  unsigned size = 0;
  if (get(module, &table, &size) != MSTX_SUCCESS || table == nullptr || size < slots.size() + 1) return false;
  unsigned slot = 1;
  for (mstxFuncPointer f : slots) {
    if (table[slot] == nullptr) return false;
    *table[slot++] = f;
  }
  return true;
}

npuprof::session* g_session = nullptr;

void start_session() {
  if (npuprof::detail::state().active.load() != nullptr) return;  // the program runs its own
  try {
    g_session = new npuprof::session(npuprof::config::from_env());  // written at exit
    g_session->start();
    std::fprintf(stderr, "npuprof: capturing mstx markers; the trace is written at exit\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "npuprof: mstx capture not started: %s\n", e.what());
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitInjectionMstx(mstxGetModuleFuncTableFunc get) {
  if (get == nullptr) return MSTX_FAIL;
  const bool core = fill(get, MSTX_API_MODULE_CORE, {fn(&mark_a), fn(&range_start_a), fn(&range_end), fn(&get_tool_id)});
  const bool domain = fill(get, MSTX_API_MODULE_CORE_DOMAIN,
                           {fn(&domain_create_a), fn(&domain_destroy), fn(&domain_mark_a),
                            fn(&domain_range_start_a), fn(&domain_range_end)});
  if (!core || !domain) {
    std::fprintf(stderr, "npuprof: mstx injection failed: the program's %s function table is missing or too small\n",
                 !core ? "CORE" : "CORE_DOMAIN");
    return MSTX_FAIL;
  }
  // Optional: programs built with an mstx header without memory tools have no CORE_MEM table.
  fill(get, MSTX_API_MODULE_CORE_MEM,
       {fn(&mem_heap_register), fn(&mem_ignore), fn(&mem_ignore), fn(&mem_ignore)});
  start_session();
  return MSTX_SUCCESS;
}
