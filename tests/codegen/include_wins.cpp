// Built with -DNPUPROF_COMPILE_INCLUDE=kernels -DNPUPROF_COMPILE_EXCLUDE=kernels:
// include wins, so kernels is compiled in and everything else is out.
#include "markers.hpp"

extern "C" void include_kernels_markers(int* x) { all_markers<kernels>(x); }
extern "C" void include_debug_markers(int* x) { all_markers<debug>(x); }
extern "C" void include_default_markers(int* x) { all_markers<npuprof::default_domain>(x); }
extern "C" void include_no_markers(int* x) { codegen_work(x); }
