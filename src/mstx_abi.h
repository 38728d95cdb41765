/* The mstx injection ABI (MindStudio Tools Extension), as a tool sees it: the
 * types of the functions a program built with the mstx header calls, and of
 * the function-table exchange that hands those calls to a tool. */
#ifndef NPUPROF_MSTX_ABI_H
#define NPUPROF_MSTX_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint64_t mstxRangeId; /* 0 = failure */
typedef void* aclrtStream;
typedef struct mstxDomainRegistration_st* mstxDomainHandle_t;

typedef void (*mstxFuncPointer)(void);
typedef mstxFuncPointer** mstxFuncTable;
typedef int (*mstxGetModuleFuncTableFunc)(int module, mstxFuncTable* outTable, unsigned* outSize);

enum {
  MSTX_SUCCESS = 0,
  MSTX_FAIL = 1,
};

/* Modules and their slots; slot 0 is unused. */
enum {
  MSTX_API_MODULE_CORE = 1,
  MSTX_API_MODULE_CORE_DOMAIN = 2,
  MSTX_API_MODULE_CORE_MEM = 3,
};
enum {
  MSTX_API_CORE_MARK_A = 1,
  MSTX_API_CORE_RANGE_START_A = 2,
  MSTX_API_CORE_RANGE_END = 3,
  MSTX_API_CORE_GET_TOOL_ID = 4,
  MSTX_API_CORE_SIZE = 5,
};
enum {
  MSTX_API_DOMAIN_CREATE_A = 1,
  MSTX_API_DOMAIN_DESTROY = 2,
  MSTX_API_DOMAIN_MARK_A = 3,
  MSTX_API_DOMAIN_RANGE_START_A = 4,
  MSTX_API_DOMAIN_RANGE_END = 5,
  MSTX_API_DOMAIN_SIZE = 6,
};
enum {
  MSTX_API_MEM_HEAP_REGISTER = 1,
  MSTX_API_MEM_HEAP_UNREGISTER = 2,
  MSTX_API_MEM_REGIONS_REGISTER = 3,
  MSTX_API_MEM_REGIONS_UNREGISTER = 4,
  MSTX_API_MEM_SIZE = 5,
};

typedef void (*mstxMarkA_t)(const char* message, aclrtStream stream);
typedef mstxRangeId (*mstxRangeStartA_t)(const char* message, aclrtStream stream);
typedef void (*mstxRangeEnd_t)(mstxRangeId id);
typedef void (*mstxGetToolId_t)(uint64_t* id);
typedef mstxDomainHandle_t (*mstxDomainCreateA_t)(const char* name);
typedef void (*mstxDomainDestroy_t)(mstxDomainHandle_t domain);
typedef void (*mstxDomainMarkA_t)(mstxDomainHandle_t domain, const char* message, aclrtStream stream);
typedef mstxRangeId (*mstxDomainRangeStartA_t)(mstxDomainHandle_t domain, const char* message, aclrtStream stream);
typedef void (*mstxDomainRangeEnd_t)(mstxDomainHandle_t domain, mstxRangeId id);

/* What npuprof's injection library reports through mstxGetToolId: "npuprof"
 * in ASCII, in the low 7 bytes. */
#define NPUPROF_MSTX_TOOL_ID UINT64_C(0x00666f727075706e)

typedef int (*InitInjectionMstx_t)(mstxGetModuleFuncTableFunc getFuncTable);

#ifdef __cplusplus
}
#endif

#endif
