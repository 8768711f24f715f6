// The example's device code: one kernel and its host launcher, compiled by nvcc for several
// -gencode targets so a build runs multi-architecture nvcc jobs (the memory-heavy kind).
#include <cstdio>

#include <cuda_runtime.h>

#include "saxpy.h"

namespace {

__global__ void SaxpyKernel(float a, const float* x, float* y, std::size_t n) {
  std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

bool Check(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(status));
  return false;
}

}  // namespace

int CudaDeviceCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : -1;
}

bool Saxpy(float a, const float* x, float* y, std::size_t n) {
  float* dx = nullptr;
  float* dy = nullptr;
  std::size_t bytes = n * sizeof(float);
  bool ok = Check(cudaMalloc(&dx, bytes), "cudaMalloc") && Check(cudaMalloc(&dy, bytes), "cudaMalloc") &&
            Check(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice), "copy x") &&
            Check(cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice), "copy y");
  if (ok) {
    unsigned blocks = static_cast<unsigned>((n + 255) / 256);
    SaxpyKernel<<<blocks, 256>>>(a, dx, dy, n);
    ok = Check(cudaGetLastError(), "launch") && Check(cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost), "copy y back");
  }
  cudaFree(dx);
  cudaFree(dy);
  return ok;
}
