// expect: PASSED
// gelu as the op defines it (none: erf; tanh: FLUX.1's approximation) in fp32, rounded once,
// one element per thread: FLUX.1's blocks with it installed give the baseline's velocity
// and latents within rounding (FLUX.1-dev end to end on a GPU:
// fk e2e eval --model flux.1-dev --workload 1024px).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fk/ops/activation.h"

namespace {

template <class T>
__global__ void gelu_kernel(T* out, int64_t so, const T* in, int64_t si, int64_t rows, int64_t cols, bool tanh_approx) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  const int64_t r = i / cols, c = i % cols;
  const float x = static_cast<float>(in[r * si + c]);
  const float y = tanh_approx ? 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)))
                              : 0.5f * x * (1.0f + erff(x * 0.70710678f));
  out[r * so + c] = static_cast<T>(y);
}

template <class T>
void launch(const fk::ops::GeluArgs& a, cudaStream_t s) {
  const int64_t n = a.input.shape[0] * a.input.shape[1];
  if (n == 0) return;
  gelu_kernel<T><<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(
      static_cast<T*>(a.out.data), a.out.strides[0], static_cast<const T*>(a.input.data), a.input.strides[0],
      a.input.shape[0], a.input.shape[1], a.approximate == fk::ops::GeluApprox::tanh);
}

fk_status run(const void* raw, void* stream) {
  const auto& a = *static_cast<const fk::ops::GeluArgs*>(raw);
  const auto s = static_cast<cudaStream_t>(stream);
  switch (a.input.dtype) {
    case fk::DType::f16: launch<__half>(a, s); break;
    case fk::DType::bf16: launch<__nv_bfloat16>(a, s); break;
    case fk::DType::f32: launch<float>(a, s); break;
    default: return FK_ERR_INVALID_ARGUMENT;
  }
  return cudaGetLastError() == cudaSuccess ? FK_OK : FK_ERR_CUDA;
}

}  // namespace

FK_EXPORT_CANDIDATE(gelu, run)
