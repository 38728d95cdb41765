// Built with -DNPUPROF_DISABLE: every marker is gone and macro arguments are
// not evaluated.
#include "markers.hpp"

extern "C" void disable_kernels_markers(int* x) { all_markers<kernels>(x); }
extern "C" void disable_default_markers(int* x) { all_markers<npuprof::default_domain>(x); }
extern "C" void disable_runtime_markers(int* x) {
  const auto d = npuprof::domain_by_name("kernels");
  npuprof::mark(d, "mark");
  npuprof::scoped_range r{d, "range"};
  npuprof::unique_range u{d, "unique"};
  npuprof::counter(d, "counter", *x);
  npuprof::range_end(d, npuprof::range_start(d, "start"));
  codegen_work(x);
}
extern "C" void disable_no_markers(int* x) { codegen_work(x); }

static int g_evaluated = 0;
[[maybe_unused]] static npuprof::stream_t counted_stream() {
  ++g_evaluated;
  return nullptr;
}

// How many macro arguments were evaluated (0 when disabled).
extern "C" int disable_macro_side_effects() {
  g_evaluated = 0;
  NPUPROF_RANGE(kernels, "range", counted_stream());
  NPUPROF_MARK(kernels, "mark", counted_stream());
  return g_evaluated;
}
