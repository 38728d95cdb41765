// One small instrumented operator file, written with npuprof's marker header.
// compile_time.py compiles it and with_nvtx3.cpp, the same file written with
// NVTX3's C++ header, in one run.
#include <npuprof/npuprof.hpp>

struct kernels {
  static constexpr const char* name = "kernels";
};

float gemm(const float* a, const float* b, int n) {
  NPUPROF_FUNC_RANGE(kernels);
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

float softmax_row(const float* x, int n) {
  NPUPROF_RANGE(kernels, "softmax");
  float m = x[0];
  for (int i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
  npuprof::mark<kernels>("softmax max found");
  return m;
}
