// The example's CUDA op as torch sees it: checks the tensor, launches scale_kernel.cu's kernel on
// torch's current stream, and binds it for Python (module name set by setup.py).
#include <ATen/cuda/CUDAContext.h>
#include <torch/extension.h>

cudaError_t LaunchScale(const float* in, float* out, float factor, int64_t n, cudaStream_t stream);

namespace {

torch::Tensor Scale(const torch::Tensor& input, double factor) {
  TORCH_CHECK(input.is_cuda(), "scale: expected a CUDA tensor");
  TORCH_CHECK(input.scalar_type() == torch::kFloat32, "scale: expected float32");
  torch::Tensor in = input.contiguous();
  torch::Tensor out = torch::empty_like(in);
  if (in.numel() == 0) return out;
  cudaError_t status = LaunchScale(in.data_ptr<float>(), out.data_ptr<float>(), static_cast<float>(factor),
                                   in.numel(), at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(status == cudaSuccess, "scale: ", cudaGetErrorString(status));
  return out;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scale", &Scale, "input * factor on the GPU", pybind11::arg("input"), pybind11::arg("factor"));
}
