// A stand-in for the toolkit's libms_tools_ext.so that records every call it
// receives, one line each, for the forwarding tests.
//
// Like the real library, on its first call (any mstx function, also
// mstxGetToolId) it loads the tool named by MSTX_INJECTION_PATH, from the
// calling thread, and hands it its function tables; calls then go on to the
// tool's functions too. Other threads wait for that start-up; a call the
// start-up itself makes on its thread finds no tool yet.
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "mstx_abi.h"

#define FAKE_API extern "C" __attribute__((visibility("default")))

namespace {

struct domain {
  std::string name;
};

std::mutex mutex;
std::string* log_text = new std::string();
std::atomic<std::uint64_t> next_id{1000};

void add(const std::string& line) {
  std::lock_guard<std::mutex> lock(mutex);
  *log_text += line;
  *log_text += '\n';
}

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%#llx", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
  return p != nullptr ? buf : "0";
}

// The tool's tables, filled by its InitInjectionMstx.
mstxFuncPointer core[MSTX_API_CORE_SIZE] = {};
mstxFuncPointer domains[MSTX_API_DOMAIN_SIZE] = {};
mstxFuncPointer mem[MSTX_API_MEM_SIZE] = {};
mstxFuncPointer* core_table[MSTX_API_CORE_SIZE] = {};
mstxFuncPointer* domain_table[MSTX_API_DOMAIN_SIZE] = {};
mstxFuncPointer* mem_table[MSTX_API_MEM_SIZE] = {};

int get_table(int module, mstxFuncTable* out, unsigned* size) {
  switch (module) {
    case MSTX_API_MODULE_CORE:
      *out = core_table;
      *size = MSTX_API_CORE_SIZE;
      return MSTX_SUCCESS;
    case MSTX_API_MODULE_CORE_DOMAIN:
      *out = domain_table;
      *size = MSTX_API_DOMAIN_SIZE;
      return MSTX_SUCCESS;
    case MSTX_API_MODULE_CORE_MEM:
      *out = mem_table;
      *size = MSTX_API_MEM_SIZE;
      return MSTX_SUCCESS;
    default:
      return MSTX_FAIL;
  }
}

enum : int { not_started, starting, started };
std::atomic<int> init_state{not_started};
std::atomic<std::thread::id> init_thread{};

void start_up() {
  for (unsigned i = 0; i < MSTX_API_CORE_SIZE; ++i) core_table[i] = &core[i];
  for (unsigned i = 0; i < MSTX_API_DOMAIN_SIZE; ++i) domain_table[i] = &domains[i];
  for (unsigned i = 0; i < MSTX_API_MEM_SIZE; ++i) mem_table[i] = &mem[i];
  const char* path = std::getenv("MSTX_INJECTION_PATH");
  if (path == nullptr || *path == '\0') return;
  void* lib = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return;
  auto init = reinterpret_cast<InitInjectionMstx_t>(::dlsym(lib, "InitInjectionMstx"));
  if (init == nullptr) return;
  add(std::string("injected|") + (init(&get_table) == MSTX_SUCCESS ? "ok" : "declined"));
}

// On every entry: the first starts up; others wait for it, except calls made
// by the start-up itself.
void ensure_started() {
  if (init_state.load(std::memory_order_acquire) == started) return;
  int expected = not_started;
  if (init_state.compare_exchange_strong(expected, starting)) {
    init_thread.store(std::this_thread::get_id());
    start_up();
    init_state.store(started, std::memory_order_release);
    return;
  }
  if (init_thread.load() == std::this_thread::get_id()) return;
  while (init_state.load(std::memory_order_acquire) != started) std::this_thread::yield();
}

template <class F>
F tool(mstxFuncPointer* table, int slot) {
  if (init_state.load(std::memory_order_acquire) != started) return nullptr;
  return reinterpret_cast<F>(__atomic_load_n(&table[slot], __ATOMIC_ACQUIRE));
}

}  // namespace

FAKE_API void mstxMarkA(const char* message, void* stream) {
  ensure_started();
  add("mark|" + std::string(message) + "|" + hex(stream));
  if (auto f = tool<mstxMarkA_t>(core, MSTX_API_CORE_MARK_A)) f(message, stream);
}

FAKE_API std::uint64_t mstxRangeStartA(const char* message, void* stream) {
  ensure_started();
  const std::uint64_t id = next_id++;
  add("range_start|" + std::string(message) + "|" + hex(stream) + "|" + std::to_string(id));
  if (auto f = tool<mstxRangeStartA_t>(core, MSTX_API_CORE_RANGE_START_A)) return f(message, stream);
  return id;
}

FAKE_API void mstxRangeEnd(std::uint64_t id) {
  ensure_started();
  add("range_end|" + std::to_string(id));
  if (auto f = tool<mstxRangeEnd_t>(core, MSTX_API_CORE_RANGE_END)) f(id);
}

FAKE_API void mstxGetToolId(std::uint64_t* id) {
  ensure_started();
  if (auto f = tool<mstxGetToolId_t>(core, MSTX_API_CORE_GET_TOOL_ID)) return f(id);
  *id = 0x66616b65;
}

FAKE_API void* mstxDomainCreateA(const char* name) {
  ensure_started();
  add("domain_create|" + std::string(name));
  return new domain{name};
}

FAKE_API void mstxDomainDestroy(void*) { ensure_started(); }

FAKE_API void mstxDomainMarkA(void* d, const char* message, void* stream) {
  ensure_started();
  add("domain_mark|" + static_cast<domain*>(d)->name + "|" + message + "|" + hex(stream));
}

FAKE_API std::uint64_t mstxDomainRangeStartA(void* d, const char* message, void* stream) {
  ensure_started();
  const std::uint64_t id = next_id++;
  add("domain_range_start|" + static_cast<domain*>(d)->name + "|" + message + "|" + hex(stream) + "|" +
      std::to_string(id));
  return id;
}

FAKE_API void mstxDomainRangeEnd(void* d, std::uint64_t id) {
  ensure_started();
  add("domain_range_end|" + static_cast<domain*>(d)->name + "|" + std::to_string(id));
}

/// Everything received so far, and forgets it.
FAKE_API const char* fake_mstx_take_log() {
  static std::string taken;
  std::lock_guard<std::mutex> lock(mutex);
  taken.swap(*log_text);
  log_text->clear();
  return taken.c_str();
}
