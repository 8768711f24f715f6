// Host-side interface of the example's CUDA kernel; included by the .cu and the C++ driver, so
// touching it rebuilds both (headroom follows nvcc's depfile like ninja does).
#pragma once

#include <cstddef>

// y = a * x + y on the GPU. Returns false (with a message on stderr) when CUDA reports an error,
// e.g. on a machine without a GPU.
bool Saxpy(float a, const float* x, float* y, std::size_t n);

// Number of CUDA devices, or -1 when the runtime cannot be used at all.
int CudaDeviceCount();
