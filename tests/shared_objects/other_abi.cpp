// A module built against another npuprof ABI (-DNPUPROF_ABI_VERSION=999),
// loaded with dlopen into a program of the current one. OTHER_ABI_SESSION
// selects the module that includes the control header and tries to start a
// session; without it the module includes only the marker header.
#include <cstdint>
#include <cstring>

#if defined(OTHER_ABI_SESSION)
#define NPUPROF_IMPLEMENTATION  // this module's own, of its own ABI
#include <npuprof/session.hpp>
#else
#include <npuprof/npuprof.hpp>
#endif

struct other {
  static constexpr const char* name = "other_abi";
};

#define OTHER_EXPORT extern "C" __attribute__((visibility("default")))

#if defined(OTHER_ABI_SESSION)
/// Tries to start a session; returns the error's text ("" when it started).
OTHER_EXPORT const char* other_abi_start_session(const char* dir) {
  static char what[512];
  try {
    npuprof::config cfg;
    cfg.output_dir = dir;
    npuprof::session s{cfg};
    s.start();
    s.stop();
    what[0] = '\0';
  } catch (const std::exception& e) {
    std::strncpy(what, e.what(), sizeof what - 1);
  }
  return what;
}
#else
OTHER_EXPORT void other_abi_record() {
  NPUPROF_RANGE(other, "range from the other ABI");
  npuprof::mark<other>("mark from the other ABI");
}

OTHER_EXPORT const void* other_abi_marker_state() { return &npuprof::detail::markers(); }
#endif
