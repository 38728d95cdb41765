// A shared object built with -fvisibility=hidden that records through the
// marker header alone, as a plugin or operator library would. PLUGIN_NAME is set
// by the build (plugin_a, plugin_b).
#include <npuprof/npuprof.hpp>

struct kernels {
  static constexpr const char* name = "kernels";
};

#define PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))
#define PLUGIN_FN2(name, suffix) name##_##suffix
#define PLUGIN_FN(name, suffix) PLUGIN_FN2(name, suffix)

// Made while the shared object loads, before the program that starts the
// session has installed the control side: the marker layer keeps them.
namespace {
const npuprof::registered_string<kernels> early_string{"registered early in " NPUPROF_DETAIL_STR(PLUGIN_NAME)};
const bool early_names = [] {
  npuprof::name_thread("named early in " NPUPROF_DETAIL_STR(PLUGIN_NAME));
  return true;
}();
}  // namespace

PLUGIN_EXPORT std::uint64_t PLUGIN_FN(PLUGIN_NAME, early_string_id)() { return early_string.id(); }

PLUGIN_EXPORT void PLUGIN_FN(PLUGIN_NAME, record_early)() {
  (void)early_names;
  npuprof::scoped_range<kernels> r{early_string};
}

PLUGIN_EXPORT void PLUGIN_FN(PLUGIN_NAME, record)() {
  NPUPROF_RANGE(kernels, "range in " NPUPROF_DETAIL_STR(PLUGIN_NAME));
  npuprof::mark<kernels>("mark in " NPUPROF_DETAIL_STR(PLUGIN_NAME));
  npuprof::counter<kernels>("plugin counter", 1);
}

PLUGIN_EXPORT const void* PLUGIN_FN(PLUGIN_NAME, state)() { return &npuprof::detail::markers(); }
PLUGIN_EXPORT const void* PLUGIN_FN(PLUGIN_NAME, thread_buffer)() { return npuprof::detail::t_buffer; }
