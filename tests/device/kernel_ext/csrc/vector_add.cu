// Copyright: (c) 2026, pdserve.sglang developers
// Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
// c = a + b for float32 CUDA tensors: one kernel, one thread per element.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/extension.h>

__global__ void vector_add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                                  int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

torch::Tensor vector_add(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda(), "vector_add: both tensors must be on a CUDA device");
  TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "vector_add: float32 only");
  TORCH_CHECK(a.sizes() == b.sizes(), "vector_add: shapes differ");
  TORCH_CHECK(a.device() == b.device(), "vector_add: tensors on different devices");
  const c10::cuda::CUDAGuard guard(a.device());
  auto ac = a.contiguous();
  auto bc = b.contiguous();
  auto c = torch::empty_like(ac);
  const int64_t n = ac.numel();
  if (n > 0) {
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    vector_add_kernel<<<static_cast<unsigned int>(blocks), threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        ac.data_ptr<float>(), bc.data_ptr<float>(), c.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
  return c;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("vector_add", &vector_add, "c = a + b (float32, CUDA)"); }
