/* A simulated Ascend runtime (ACL): the event and stream calls of
 * libascendcl.so with the same signatures, executed by host threads.
 *
 * It stands in for a real NPU in npuprof's tests, examples and benchmarks,
 * and is always reported as simulated. Each stream runs its work in order on
 * its own worker thread, which polls for work as a device does (submitting
 * wakes no thread); events complete when their stream reaches them; the
 * device clock has its own rate and offset from the host clock.
 *
 * The npuprof_sim_* calls exist only here: they launch simulated kernels and
 * set up the conditions tests need (event limits, failing calls). */
#ifndef NPUPROF_SIMULATED_ACL_H
#define NPUPROF_SIMULATED_ACL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int aclError;
typedef void* aclrtStream;
typedef void* aclrtEvent;
typedef enum aclrtEventRecordedStatus {
  ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
  ACL_EVENT_RECORDED_STATUS_COMPLETE = 1
} aclrtEventRecordedStatus;

#define ACL_SUCCESS 0
#define ACL_EVENT_SYNC 0x1u
#define ACL_EVENT_TIME_LINE 0x8u

/* Error codes the simulation returns (a stream handle it did not create gets
 * NPUPROF_SIM_ERROR_INVALID_PARAM, as ACL_ERROR_INVALID_PARAM on a device). */
#define NPUPROF_SIM_ERROR_INVALID_PARAM 107000
#define NPUPROF_SIM_ERROR_NOT_SUPPORTED 207000
#define NPUPROF_SIM_ERROR_NO_RESOURCE 207001
#define NPUPROF_SIM_ERROR_NOT_READY 207005
#define NPUPROF_SIM_ERROR_INTERNAL 507000

aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t flag);
aclError aclrtCreateEvent(aclrtEvent* event);
aclError aclrtDestroyEvent(aclrtEvent event);
aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
aclError aclrtSynchronizeEvent(aclrtEvent event);
aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status);
aclError aclrtEventElapsedTime(float* ms, aclrtEvent start, aclrtEvent end);
aclError aclrtEventGetTimestamp(aclrtEvent event, uint64_t* timestamp);
aclError aclrtGetDevice(int32_t* deviceId);
aclError aclrtCreateStream(aclrtStream* stream);
aclError aclrtDestroyStream(aclrtStream stream);
aclError aclrtSynchronizeStream(aclrtStream stream);
/* The chip's name; the simulation says it is one. */
const char* aclrtGetSocName(void);

/* Queues a kernel that keeps `stream` busy for `microseconds`. */
aclError npuprof_sim_launch_kernel(aclrtStream stream, uint32_t microseconds);
/* At most `limit` events may exist at once (real devices: 1023 to 65536). */
void npuprof_sim_set_event_limit(uint32_t limit);
/* The next `times` calls of the ACL function `function` return `error`. */
void npuprof_sim_fail(const char* function, aclError error, int times);
/* Whether aclrtEventGetTimestamp works (it exists only on A2/A3-class devices). */
void npuprof_sim_set_timestamp_supported(int supported);
/* The device clock: microseconds = offset_us + host elapsed * (1 + drift_ppm / 1e6). */
void npuprof_sim_device_clock(uint64_t* offset_us, double* drift_ppm);
/* Events that exist now. */
uint32_t npuprof_sim_live_events(void);
/* The path this library was loaded from. */
const char* npuprof_sim_library_path(void);

#ifdef __cplusplus
}
#endif

#endif
