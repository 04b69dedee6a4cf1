// CUDA baselines of gdn_gating and sigmoid_mul (fk/ops/ssm_gating.h): element-wise passes,
// one thread per element of a [T, N] matrix (grid-striding), math in fp32 with the accurate
// expf / log1pf, rounded once. Both are a few bytes per element next to the GEMMs around
// them (Qwen3-Next-80B-A3B: gdn_gating reads 2 x 32 gate logits a token, sigmoid_mul
// 2 x 4096 values), so they stay simple; rows may be strided (columns of a projection).
#include <cuda_runtime.h>

#include <algorithm>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/ssm/qwen3_next_gating_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 65535 * 8));
}

__device__ __forceinline__ float softplus_f(float x) { return x > 20.f ? x : log1pf(expf(x)); }
__device__ __forceinline__ float sigmoid_f(float x) { return 1.f / (1.f + expf(-x)); }

template <class T, class B>
__global__ void __launch_bounds__(kThreads)
    gdn_gating_kernel(float* g, B* beta, const T* a, int64_t a_stride, const T* b, int64_t b_stride,
                      const float* a_log, const float* dt_bias, int64_t rows, int cols) {
  const int64_t n = rows * cols;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / cols;
    const int h = static_cast<int>(i % cols);
    const float x = cuda::to_float(a[t * a_stride + h]) + dt_bias[h];
    g[i] = -expf(a_log[h]) * softplus_f(x);
    beta[i] = cuda::from_float<B>(sigmoid_f(cuda::to_float(b[t * b_stride + h])));
  }
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    sigmoid_mul_kernel(T* out, int64_t out_stride, const T* in, int64_t in_stride, const T* gate, int64_t gate_stride,
                       int64_t rows, int cols) {
  const int64_t n = rows * cols;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t t = i / cols, c = i % cols;
    const float x = cuda::to_float(in[t * in_stride + c]), s = sigmoid_f(cuda::to_float(gate[t * gate_stride + c]));
    out[t * out_stride + c] = cuda::from_float<T>(x * s);
  }
}

fk_status gdn_gating_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const GdnGatingArgs*>(args);
    validate_gdn_gating(a, DeviceType::cuda);
    const int64_t rows = a.a.shape[0], cols = a.a.shape[1];
    if (rows == 0 || cols == 0) return;
    const auto s = static_cast<cudaStream_t>(stream);
    cuda::dispatch_float_dtype(a.a.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      auto go = [&](auto* beta) {
        gdn_gating_kernel<<<blocks_for(rows * cols), kThreads, 0, s>>>(
            a.g.ptr<float>(), beta, a.a.ptr<T>(), a.a.strides[0], a.b.ptr<T>(), a.b.strides[0], a.a_log.ptr<float>(),
            a.dt_bias.ptr<float>(), rows, static_cast<int>(cols));
        FK_CUDA_CHECK_LAUNCH();
      };
      if (a.beta.dtype == DType::f32)
        go(a.beta.ptr<float>());
      else
        go(a.beta.ptr<T>());
    });
  });
}

fk_status sigmoid_mul_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const SigmoidMulArgs*>(args);
    validate_sigmoid_mul(a, DeviceType::cuda);
    const int64_t rows = a.input.shape[0], cols = a.input.shape[1];
    if (rows == 0 || cols == 0) return;
    cuda::dispatch_float_dtype(a.input.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      sigmoid_mul_kernel<<<blocks_for(rows * cols), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
          a.out.ptr<T>(), a.out.strides[0], a.input.ptr<T>(), a.input.strides[0], a.gate.ptr<T>(), a.gate.strides[0],
          rows, static_cast<int>(cols));
      FK_CUDA_CHECK_LAUNCH();
    });
  });
}

FK_REGISTER_IMPL("gdn_gating", cuda, gdn_gating_cuda);
FK_REGISTER_IMPL("sigmoid_mul", cuda, sigmoid_mul_cuda);

}  // namespace
}  // namespace fk::ops
