// The example's CUDA kernel and launcher. It uses only the CUDA runtime (no torch headers), so the
// nvcc job stays small even when compiled for several architectures.
#include <cstdint>

#include <cuda_runtime.h>

namespace {

__global__ void ScaleKernel(const float* in, float* out, float factor, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = in[i] * factor;
}

}  // namespace

cudaError_t LaunchScale(const float* in, float* out, float factor, int64_t n, cudaStream_t stream) {
  constexpr int kThreads = 256;
  int64_t blocks = (n + kThreads - 1) / kThreads;
  ScaleKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(in, out, factor, n);
  return cudaGetLastError();
}
