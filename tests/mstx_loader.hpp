// Plays the part of the mstx header in a program: holds the function tables,
// loads the library named by MSTX_INJECTION_PATH and calls its
// InitInjectionMstx. Written from the ABI alone, as any mstx program does it.
#pragma once

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "mstx_abi.h"

class mstx_loader {
 public:
  /// Table sizes offered to the tool (tests shrink them to check refusal).
  unsigned core_size = MSTX_API_CORE_SIZE;
  unsigned domain_size = MSTX_API_DOMAIN_SIZE;
  unsigned mem_size = MSTX_API_MEM_SIZE;

  mstx_loader() {
    for (unsigned i = 0; i < 8; ++i) {
      core_table_[i] = &core_[i];
      domain_table_[i] = &domain_[i];
      mem_table_[i] = &mem_[i];
    }
  }

  /// Loads the tool; returns InitInjectionMstx's result, or -1 when it cannot
  /// be loaded.
  int load() {
    const char* path = std::getenv("MSTX_INJECTION_PATH");
    if (path == nullptr) return -1;
    void* lib = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) return -1;
    auto init = reinterpret_cast<InitInjectionMstx_t>(::dlsym(lib, "InitInjectionMstx"));
    if (init == nullptr) return -1;
    current_ = this;
    return init(&get_table);
  }

  // As the mstx header does: a slot the tool did not fill is a no-op. The
  // tool may fill slots while other threads call.
  template <class F, class... A>
  static decltype(std::declval<F>()(std::declval<A>()...)) call(mstxFuncPointer& slot, A... args) {
    const mstxFuncPointer p = __atomic_load_n(&slot, __ATOMIC_ACQUIRE);
    if (p == nullptr) return decltype(std::declval<F>()(std::declval<A>()...))();
    return reinterpret_cast<F>(p)(args...);
  }

  /// Whether the tool has filled the CORE table's range start.
  bool has_range_start() { return __atomic_load_n(&core_[MSTX_API_CORE_RANGE_START_A], __ATOMIC_ACQUIRE) != nullptr; }

  void mark(const char* m, aclrtStream s = nullptr) { call<mstxMarkA_t>(core_[MSTX_API_CORE_MARK_A], m, s); }
  mstxRangeId range_start(const char* m, aclrtStream s = nullptr) {
    return call<mstxRangeStartA_t>(core_[MSTX_API_CORE_RANGE_START_A], m, s);
  }
  void range_end(mstxRangeId id) { call<mstxRangeEnd_t>(core_[MSTX_API_CORE_RANGE_END], id); }
  std::uint64_t tool_id() {
    std::uint64_t id = 0;
    call<mstxGetToolId_t>(core_[MSTX_API_CORE_GET_TOOL_ID], &id);
    return id;
  }
  mstxDomainHandle_t domain_create(const char* name) {
    return call<mstxDomainCreateA_t>(domain_[MSTX_API_DOMAIN_CREATE_A], name);
  }
  void domain_destroy(mstxDomainHandle_t d) { call<mstxDomainDestroy_t>(domain_[MSTX_API_DOMAIN_DESTROY], d); }
  void domain_mark(mstxDomainHandle_t d, const char* m, aclrtStream s = nullptr) {
    call<mstxDomainMarkA_t>(domain_[MSTX_API_DOMAIN_MARK_A], d, m, s);
  }
  mstxRangeId domain_range_start(mstxDomainHandle_t d, const char* m, aclrtStream s = nullptr) {
    return call<mstxDomainRangeStartA_t>(domain_[MSTX_API_DOMAIN_RANGE_START_A], d, m, s);
  }
  void domain_range_end(mstxDomainHandle_t d, mstxRangeId id) {
    call<mstxDomainRangeEnd_t>(domain_[MSTX_API_DOMAIN_RANGE_END], d, id);
  }
  bool has_mem_functions() const { return mem_[MSTX_API_MEM_HEAP_REGISTER] != nullptr; }

 private:
  static int get_table(int module, mstxFuncTable* out, unsigned* size) {
    switch (module) {
      case MSTX_API_MODULE_CORE:
        *out = current_->core_table_;
        *size = current_->core_size;
        return MSTX_SUCCESS;
      case MSTX_API_MODULE_CORE_DOMAIN:
        *out = current_->domain_table_;
        *size = current_->domain_size;
        return MSTX_SUCCESS;
      case MSTX_API_MODULE_CORE_MEM:
        *out = current_->mem_table_;
        *size = current_->mem_size;
        return MSTX_SUCCESS;
      default:
        return MSTX_FAIL;
    }
  }

  static inline mstx_loader* current_ = nullptr;
  mstxFuncPointer core_[8] = {};
  mstxFuncPointer domain_[8] = {};
  mstxFuncPointer mem_[8] = {};
  mstxFuncPointer* core_table_[8];
  mstxFuncPointer* domain_table_[8];
  mstxFuncPointer* mem_table_[8];
};
