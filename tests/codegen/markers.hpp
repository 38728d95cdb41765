// Functions compiled under different compile-time filters, so that
// check_codegen.py can compare their machine code. `work` is opaque, so that
// each function keeps a body.
#pragma once

#include <npuprof/npuprof.hpp>

struct kernels {
  static constexpr const char* name = "kernels";
};
struct debug {
  static constexpr const char* name = "debug";
};

extern "C" void codegen_work(int* x);

// Every kind of marker, in domain D.
template <class D>
__attribute__((always_inline)) inline void all_markers(int* x) {
  NPUPROF_RANGE(D, "range");
  NPUPROF_FUNC_RANGE(D);
  NPUPROF_MARK(D, "mark");
  npuprof::scoped_range<D> scoped{"scoped"};
  npuprof::mark<D>("mark");
  npuprof::counter<D>("counter", *x);
  const npuprof::range_id id = npuprof::range_start<D>("start");
  npuprof::unique_range<D> unique{"unique"};
  codegen_work(x);
  npuprof::range_end<D>(id);
}
