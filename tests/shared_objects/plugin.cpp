// A shared object built with -fvisibility=hidden that records through the
// npuprof headers, as a plugin or operator library would. PLUGIN_NAME is set
// by the build (plugin_a, plugin_b).
#include <npuprof/npuprof.hpp>

struct kernels {
  static constexpr const char* name = "kernels";
};

#define PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
#define PLUGIN_FN2(name, suffix) name##_##suffix
#define PLUGIN_FN(name, suffix) PLUGIN_FN2(name, suffix)

PLUGIN_EXPORT void PLUGIN_FN(PLUGIN_NAME, record)() {
  NPUPROF_RANGE(kernels, "range in " NPUPROF_DETAIL_STR(PLUGIN_NAME));
  npuprof::mark<kernels>("mark in " NPUPROF_DETAIL_STR(PLUGIN_NAME));
  npuprof::counter<kernels>("plugin counter", 1);
}

PLUGIN_EXPORT const void* PLUGIN_FN(PLUGIN_NAME, state)() { return &npuprof::detail::state(); }
PLUGIN_EXPORT const void* PLUGIN_FN(PLUGIN_NAME, thread_buffer)() { return npuprof::detail::t_buffer; }
