# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""pdserve_vecadd: one CUDA kernel (c = a + b, float32) built with torch.utils.cpp_extension for
TORCH_CUDA_ARCH_LIST, the small real kernel build of tests/device/kernel_build.sh.

PDSERVE_KERNEL_EXT_DRY=1 (a machine without CUDA or torch, to try the Ansible side) builds the package
without its extension."""

import os

from setuptools import setup

KWARGS = {
    "name": "pdserve_vecadd",
    "version": "0.1.0",
    "description": "One CUDA kernel (vector add) for pdserve.sglang's device test of kernel builds",
    "packages": ["pdserve_vecadd"],
}

if os.environ.get("PDSERVE_KERNEL_EXT_DRY") == "1":
    setup(**KWARGS)
else:
    from torch.utils.cpp_extension import BuildExtension, CUDAExtension

    setup(
        ext_modules=[CUDAExtension("pdserve_vecadd._C", ["csrc/vector_add.cu"], extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O2"]})],
        cmdclass={"build_ext": BuildExtension},
        **KWARGS
    )
