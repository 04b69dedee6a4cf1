// Shared by the CUDA adversarial candidates: an honest, simple rms_norm kernel (one block
// per row) to build each cheat from, so a cheat file shows only its trick.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "fk/ops/norm.h"

namespace adv {

template <class T>
__device__ float ld(const T* p, int64_t i) {
  if constexpr (sizeof(T) == 4) return p[i];
  else if constexpr (std::is_same_v<T, __half>) return __half2float(p[i]);
  else return __bfloat162float(p[i]);
}
template <class T>
__device__ void st(T* p, int64_t i, float x) {
  if constexpr (sizeof(T) == 4) p[i] = x;
  else if constexpr (std::is_same_v<T, __half>) p[i] = __float2half_rn(x);
  else p[i] = __float2bfloat16_rn(x);
}

// sync_in_reduce = false drops the barriers of the shared-memory reduction: a race.
// inv_bits_mask trims the mantissa of 1/rms: reduced precision.
template <class T>
__global__ void rms_norm_rows(T* out, int64_t os, const T* in, int64_t is, const T* w, int H, float eps,
                             int rows, bool sync_in_reduce, unsigned inv_bits_mask) {
  __shared__ float partial[256];
  const int row = blockIdx.x;
  if (row >= rows) return;
  float ss = 0.f;
  for (int h = threadIdx.x; h < H; h += blockDim.x) {
    const float x = ld(in + row * is, h);
    ss += x * x;
  }
  partial[threadIdx.x] = ss;
  if (sync_in_reduce) __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    if (sync_in_reduce) __syncthreads();
  }
  float inv = rsqrtf(partial[0] / H + eps);
  inv = __uint_as_float(__float_as_uint(inv) & inv_bits_mask);
  for (int h = threadIdx.x; h < H; h += blockDim.x)
    st(out + row * os, h, ld(in + row * is, h) * inv * ld(w, h));
}

// Launches the kernel for the args' dtype on `stream`.
inline fk_status launch(const fk::ops::RmsNormArgs& a, cudaStream_t stream, int rows = -1, bool sync = true,
                        unsigned mask = 0xffffffffu) {
  const int T = static_cast<int>(a.input.shape[0]), H = static_cast<int>(a.input.shape[1]);
  if (rows < 0) rows = T;
  if (T == 0) return FK_OK;
  auto go = [&](auto* tag) {
    using E = std::remove_pointer_t<decltype(tag)>;
    rms_norm_rows<E><<<T, 256, 0, stream>>>(static_cast<E*>(a.out.data), a.out.strides[0],
                                            static_cast<const E*>(a.input.data), a.input.strides[0],
                                            static_cast<const E*>(a.weight.data), H, a.eps, rows, sync, mask);
  };
  switch (a.input.dtype) {
    case fk::DType::bf16: go(static_cast<__nv_bfloat16*>(nullptr)); break;
    case fk::DType::f16: go(static_cast<__half*>(nullptr)); break;
    case fk::DType::f32: go(static_cast<float*>(nullptr)); break;
    default: return FK_ERR_UNSUPPORTED;
  }
  return cudaGetLastError() == cudaSuccess ? FK_OK : FK_ERR_CUDA;
}

inline const fk::ops::RmsNormArgs& args(const void* raw) { return *static_cast<const fk::ops::RmsNormArgs*>(raw); }

}  // namespace adv
