// Declarations of the example's CPU op, shared by its implementation and the Python bindings.
#pragma once

#include <ATen/core/Tensor.h>

// a + alpha * b, elementwise; a and b must have the same shape.
at::Tensor ScaledAdd(const at::Tensor& a, const at::Tensor& b, double alpha);
