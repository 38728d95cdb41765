// The file of with_npuprof.cpp, written with NVTX3's C++ header.
#include <nvtx3/nvtx3.hpp>

struct kernels {
  static constexpr const char* name{"kernels"};
};

float gemm(const float* a, const float* b, int n) {
  NVTX3_FUNC_RANGE_IN(kernels);
  float acc = 0;
  for (int i = 0; i < n; ++i) acc += a[i] * b[i];
  return acc;
}

float softmax_row(const float* x, int n) {
  nvtx3::scoped_range_in<kernels> r{"softmax"};
  float m = x[0];
  for (int i = 1; i < n; ++i) m = x[i] > m ? x[i] : m;
  nvtx3::mark_in<kernels>("softmax max found");
  return m;
}
