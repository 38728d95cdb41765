// Built with -DNPUPROF_COMPILE_EXCLUDE=debug.
#include "markers.hpp"

extern "C" void exclude_debug_markers(int* x) { all_markers<debug>(x); }
extern "C" void exclude_kernels_markers(int* x) { all_markers<kernels>(x); }
extern "C" void exclude_no_markers(int* x) { codegen_work(x); }
