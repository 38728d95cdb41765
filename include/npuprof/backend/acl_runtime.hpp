// The Ascend runtime's event and stream calls, loaded with dlopen so that
// nothing Ascend is needed to build or to run without a device.
#pragma once

#include "../marker/abi.hpp"

#include <cstdint>
#include <string>

#include "shared_library.hpp"

namespace npuprof {
NPUPROF_ABI_BEGIN
namespace detail {

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
  const char* (*get_soc_name)() = nullptr;  // optional: the chip's name

  std::string path;        // the library as found
  bool simulated = false;  // npuprof's simulated runtime, not a device

  /// Loads the runtime from `wanted` (or searches the usual places when it is
  /// empty). On failure returns false and says why in `why`.
  bool load(std::string wanted, std::string& why) {
    shared_library lib(wanted.empty() ? default_path() : wanted, "the Ascend runtime");
    if (!lib.open(why)) return false;
    lib.need(create_event_with_flag, "aclrtCreateEventWithFlag");
    lib.need(destroy_event, "aclrtDestroyEvent");
    lib.need(record_event, "aclrtRecordEvent");
    lib.need(synchronize_event, "aclrtSynchronizeEvent");
    lib.need(query_event_status, "aclrtQueryEventStatus");
    lib.need(event_elapsed_time, "aclrtEventElapsedTime");
    lib.need(get_device, "aclrtGetDevice");
    lib.need(create_stream, "aclrtCreateStream");
    lib.need(destroy_stream, "aclrtDestroyStream");
    if (!lib.complete(why)) return false;
    event_get_timestamp = lib.find<decltype(event_get_timestamp)>("aclrtEventGetTimestamp");
    get_soc_name = lib.find<decltype(get_soc_name)>("aclrtGetSocName");
    simulated = lib.find<void*>("npuprof_sim_launch_kernel") != nullptr;
    path = lib.path();
    return true;  // the library stays loaded for the life of the process
  }

  /// NPUPROF_ACL_LIBRARY, else $ASCEND_HOME_PATH/lib64/libascendcl.so, else
  /// the loader's search path (which also finds a runtime already loaded).
  static std::string default_path() { return toolkit_library_path("NPUPROF_ACL_LIBRARY", "libascendcl.so"); }
};

}  // namespace detail
NPUPROF_ABI_END
}  // namespace npuprof
