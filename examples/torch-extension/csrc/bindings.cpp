// Python bindings of the example's CPU extension (module name set by setup.py).
#include <torch/extension.h>

#include "scaled_add.h"

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("scaled_add", &ScaledAdd, "a + alpha * b", pybind11::arg("a"), pybind11::arg("b"), pybind11::arg("alpha") = 1.0);
}
