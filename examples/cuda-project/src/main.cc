// The example's host program: runs saxpy on the GPU when there is one and checks the result; on
// a machine without a GPU it says so and exits 0, since compiling is what the example is about.
#include <cstdio>
#include <vector>

#include "saxpy.h"

int main() {
  if (CudaDeviceCount() <= 0) {
    std::puts("saxpy: no CUDA device, nothing run");
    return 0;
  }
  std::vector<float> x(1000, 1.0f), y(1000, 2.0f);
  if (!Saxpy(3.0f, x.data(), y.data(), x.size())) return 1;
  for (float v : y) {
    if (v != 5.0f) {
      std::printf("saxpy: wrong result %f\n", v);
      return 1;
    }
  }
  std::puts("saxpy: ok");
  return 0;
}
