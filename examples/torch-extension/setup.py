# Example: a PyTorch C++ (and optionally CUDA) extension built by torch.utils.cpp_extension, which
# writes a build.ninja and runs the `ninja` found on PATH as `ninja -v [-j N]`: put headroom there.
"""Build with headroom as ninja:

    export PATH="<dir holding a `ninja` that is headroom>:$PATH"
    MAX_JOBS=auto pip install --no-build-isolation .       # or: python setup.py build_ext --inplace

HEADROOM_EXAMPLE_EXTENSIONS picks what to build: "cpu" (default), "cuda" or "cpu,cuda". The CUDA one
needs an nvcc of torch's CUDA major version; TORCH_CUDA_ARCH_LIST picks its -gencode targets
(default here: 8.0;9.0).
"""

import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CppExtension, CUDAExtension


# setuptools runs setup.py from its own directory (pip does too), so sources are relative to it.
def source(name):
    return os.path.join("csrc", name)


wanted = set(os.environ.get("HEADROOM_EXAMPLE_EXTENSIONS", "cpu").split(","))
ext_modules = []

if "cpu" in wanted:
    ext_modules.append(
        CppExtension(
            "headroom_example_ops",
            [source("scaled_add.cpp"), source("bindings.cpp")],
            extra_compile_args=["-O2"],
        )
    )

if "cuda" in wanted:
    # Several architectures, as real projects (flash-attn) do: one nvcc device pass per entry.
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "8.0;9.0")
    ext_modules.append(
        CUDAExtension(
            "headroom_example_cuda",
            [source("scale_kernel.cu"), source("scale_cuda_bindings.cpp")],
            extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O2"]},
        )
    )

setup(
    name="headroom-torch-extension-example",
    version="0.1.0",
    ext_modules=ext_modules,
    # use_ninja is the default; spelled out because running ninja is the point of the example.
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
