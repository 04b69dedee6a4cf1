// The launch parameters and the epilogue shared by conv2d's CUDA kernels (conv2d.cu and the
// headers it includes: depthwise, direct small-channel, tensor-core implicit GEMMs).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/conv/nhwc.cuh"

namespace fk::ops::conv_cuda {

template <class T>
struct ConvParams {
  Nhwc<const T> in;
  Nhwc<T> out;
  const T* weight;    // [K, R, S, Cg], contiguous
  const T* bias;      // [K] or null
  Nhwc<const T> res;  // the residual added after the activation; res.p null: none
  int R, S, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w;
  int Cg, Kg, P, Q;
  int64_t M;  // N * P * Q
  bool silu, relu;
};

// Bias, then the activation; the residual is added by the caller after it, as the reference.
__device__ __forceinline__ float conv_epilogue(float acc, const float bias, bool silu, bool relu) {
  const float x = acc + bias;
  if (relu) return isnan(x) || x > 0.f ? x : 0.f;  // NaN propagates and -0 becomes +0, as the reference
  return silu ? x / (1.f + expf(-x)) : x;          // x << 0: expf overflows to inf, x / inf = -0, the limit
}

// Output pixel m (of N * P * Q) as image, row and column.
struct PixelIndex {
  int64_t n;
  int p, q;
};
__device__ __forceinline__ PixelIndex pixel_index(int64_t m, int P, int Q) {
  const int64_t row = m / Q;
  return {row / P, static_cast<int>(row % P), static_cast<int>(m - row * Q)};
}

}  // namespace fk::ops::conv_cuda
