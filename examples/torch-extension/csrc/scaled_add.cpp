// The example's CPU op, kept apart from the bindings so the extension has two compile jobs to run;
// it needs only the Tensor class, not all of torch/extension.h.
#include "scaled_add.h"

at::Tensor ScaledAdd(const at::Tensor& a, const at::Tensor& b, double alpha) {
  TORCH_CHECK(a.sizes() == b.sizes(), "scaled_add: shapes differ: ", a.sizes(), " vs ", b.sizes());
  return a.add(b, alpha);
}
