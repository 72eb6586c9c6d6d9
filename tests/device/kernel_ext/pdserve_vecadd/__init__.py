# Copyright: (c) 2026, pdserve.sglang developers
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One CUDA kernel for the device test of sglang_install's kernel builds: ``vector_add(a, b)`` on float32 CUDA
tensors, from the compiled ``pdserve_vecadd._C`` (import torch first: the extension links against libtorch)."""


def vector_add(a, b):
    import torch  # noqa: F401  (loads libtorch, which the extension needs)
    from pdserve_vecadd import _C

    return _C.vector_add(a, b)
