/* A plain C program annotated with mstx, as Ascend code is: it declares the
 * mstx functions it uses and, like the mstx header, loads the tool named by
 * MSTX_INJECTION_PATH and lets it fill the function tables.
 *
 * Run it with npuprof's injection library to get a trace, no rebuild needed:
 *   MSTX_INJECTION_PATH=build/src/libnpuprof_mstx.so build/examples/mstx_app
 *
 * With an Ascend runtime (MSTX_APP_ACL names the library; npuprof's simulated
 * one is build/src/simulated/libascendcl.so) its operator ranges are tied to
 * a stream, as operator code ties them, so their device time is recorded too.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef uint64_t mstxRangeId;
typedef void* aclrtStream;
typedef struct mstxDomainRegistration_st* mstxDomainHandle_t;
typedef void (*mstxFuncPointer)(void);
typedef mstxFuncPointer** mstxFuncTable;
typedef int (*mstxGetModuleFuncTableFunc)(int module, mstxFuncTable* outTable, unsigned* outSize);

/* The slots the tool fills: module 1 (CORE) and module 2 (CORE_DOMAIN). */
static mstxFuncPointer core[5], domain[6];
static mstxFuncPointer* core_table[5] = {&core[0], &core[1], &core[2], &core[3], &core[4]};
static mstxFuncPointer* domain_table[6] = {&domain[0], &domain[1], &domain[2], &domain[3], &domain[4], &domain[5]};

static int get_module_table(int module, mstxFuncTable* out, unsigned* size) {
  if (module == 1) { *out = core_table; *size = 5; return 0; }
  if (module == 2) { *out = domain_table; *size = 6; return 0; }
  return 1;
}

static void load_tool(void) {
  const char* path = getenv("MSTX_INJECTION_PATH");
  void* lib = path ? dlopen(path, RTLD_NOW) : NULL;
  int (*init)(mstxGetModuleFuncTableFunc) = NULL;
  if (lib) *(void**)&init = dlsym(lib, "InitInjectionMstx");
  if (!init || init(get_module_table) != 0) {
    fprintf(stderr, "mstx_app: no mstx tool loaded (set MSTX_INJECTION_PATH); markers do nothing\n");
  }
}

/* What the mstx header's functions do: call the tool's slot if filled. */
static void mstxMarkA(const char* m, aclrtStream s) {
  if (core[1]) ((void (*)(const char*, aclrtStream))core[1])(m, s);
}
static mstxRangeId mstxRangeStartA(const char* m, aclrtStream s) {
  return core[2] ? ((mstxRangeId(*)(const char*, aclrtStream))core[2])(m, s) : 0;
}
static void mstxRangeEnd(mstxRangeId id) {
  if (core[3]) ((void (*)(mstxRangeId))core[3])(id);
}
static mstxDomainHandle_t mstxDomainCreateA(const char* name) {
  return domain[1] ? ((mstxDomainHandle_t(*)(const char*))domain[1])(name) : NULL;
}
static mstxRangeId mstxDomainRangeStartA(mstxDomainHandle_t d, const char* m, aclrtStream s) {
  return domain[4] ? ((mstxRangeId(*)(mstxDomainHandle_t, const char*, aclrtStream))domain[4])(d, m, s) : 0;
}
static void mstxDomainRangeEnd(mstxDomainHandle_t d, mstxRangeId id) {
  if (domain[5]) ((void (*)(mstxDomainHandle_t, mstxRangeId))domain[5])(d, id);
}

/* A stream of the runtime named by MSTX_APP_ACL, or NULL: ranges on the host only. */
static int (*sim_kernel)(aclrtStream, uint32_t); /* the simulated runtime's stand-in for a kernel */
static aclrtStream open_stream(void) {
  const char* path = getenv("MSTX_APP_ACL");
  void* acl = path && *path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : NULL;
  int (*create)(aclrtStream*) = NULL;
  aclrtStream stream = NULL;
  if (acl) *(void**)&create = dlsym(acl, "aclrtCreateStream");
  if (acl) *(void**)&sim_kernel = dlsym(acl, "npuprof_sim_launch_kernel");
  if (!create || create(&stream) != 0) return NULL;
  return stream;
}

static void work(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

int main(void) {
  load_tool();
  aclrtStream stream = open_stream();
  mstxDomainHandle_t ops = mstxDomainCreateA("operators");
  mstxMarkA("start", NULL);
  for (int step = 0; step < 4; ++step) {
    char name[32];
    snprintf(name, sizeof name, "step %d", step);
    mstxRangeId r = mstxRangeStartA(name, NULL);
    mstxRangeId mm = mstxDomainRangeStartA(ops, "matmul", stream);
    if (stream && sim_kernel) sim_kernel(stream, 300);
    work(300);
    mstxDomainRangeEnd(ops, mm);
    mstxRangeId sm = mstxDomainRangeStartA(ops, "softmax", stream);
    if (stream && sim_kernel) sim_kernel(stream, 100);
    work(100);
    mstxDomainRangeEnd(ops, sm);
    mstxRangeEnd(r);
  }
  mstxMarkA("done", NULL);
  printf("mstx_app: done; with npuprof injected, the trace path is printed at exit\n");
  return 0;
}
