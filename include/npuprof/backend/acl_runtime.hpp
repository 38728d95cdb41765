// The Ascend runtime's event and stream calls, loaded with dlopen so that
// nothing Ascend is needed to build or to run without a device.
#pragma once

#include <dlfcn.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace npuprof::detail {

/// The ACL functions npuprof calls, looked up in one loaded library.
struct acl_runtime {
  using aclError = int;
  static constexpr std::uint32_t event_time_line = 0x8;  // ACL_EVENT_TIME_LINE
  static constexpr int status_complete = 1;              // ACL_EVENT_RECORDED_STATUS_COMPLETE

  aclError (*create_event_with_flag)(void** event, std::uint32_t flag) = nullptr;
  aclError (*destroy_event)(void* event) = nullptr;
  aclError (*record_event)(void* event, void* stream) = nullptr;
  aclError (*synchronize_event)(void* event) = nullptr;
  aclError (*query_event_status)(void* event, int* status) = nullptr;
  aclError (*event_elapsed_time)(float* ms, void* start, void* end) = nullptr;
  aclError (*event_get_timestamp)(void* event, std::uint64_t* us) = nullptr;  // optional: A2/A3 and later
  aclError (*get_device)(std::int32_t* device) = nullptr;
  aclError (*create_stream)(void** stream) = nullptr;
  aclError (*destroy_stream)(void* stream) = nullptr;

  std::string path;        // the library as found
  bool simulated = false;  // npuprof's simulated runtime, not a device

  /// Loads the runtime from `path` (or searches the usual places when it is
  /// empty). On failure returns false and says why in `why`.
  bool load(std::string wanted, std::string& why) {
    if (wanted.empty()) wanted = default_path();
    void* lib = ::dlopen(wanted.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = ::dlerror();
      why = "cannot load the Ascend runtime '" + wanted + "': " + (e != nullptr ? e : "unknown error");
      return false;
    }
    path = wanted;
    const char* missing = nullptr;
    auto need = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      if (fn == nullptr && missing == nullptr) missing = name;
    };
    need(create_event_with_flag, "aclrtCreateEventWithFlag");
    need(destroy_event, "aclrtDestroyEvent");
    need(record_event, "aclrtRecordEvent");
    need(synchronize_event, "aclrtSynchronizeEvent");
    need(query_event_status, "aclrtQueryEventStatus");
    need(event_elapsed_time, "aclrtEventElapsedTime");
    need(get_device, "aclrtGetDevice");
    need(create_stream, "aclrtCreateStream");
    need(destroy_stream, "aclrtDestroyStream");
    if (missing != nullptr) {
      why = "the Ascend runtime '" + wanted + "' has no " + missing;
      ::dlclose(lib);
      return false;
    }
    event_get_timestamp =
        reinterpret_cast<decltype(event_get_timestamp)>(::dlsym(lib, "aclrtEventGetTimestamp"));
    simulated = ::dlsym(lib, "npuprof_sim_launch_kernel") != nullptr;
    return true;  // the library stays loaded for the life of the process
  }

  /// NPUPROF_ACL_LIBRARY, else $ASCEND_HOME_PATH/lib64/libascendcl.so, else
  /// the loader's search path (which also finds a runtime already loaded).
  static std::string default_path() {
    if (const char* p = std::getenv("NPUPROF_ACL_LIBRARY"); p != nullptr && *p != '\0') return p;
    if (const char* home = std::getenv("ASCEND_HOME_PATH"); home != nullptr && *home != '\0') {
      return std::string(home) + "/lib64/libascendcl.so";
    }
    return "libascendcl.so";
  }
};

}  // namespace npuprof::detail
