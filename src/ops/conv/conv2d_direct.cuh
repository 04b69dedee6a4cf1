// conv2d's direct kernel for dense convolutions over few input channels (a stem on 3 colour
// channels), included by conv2d.cu. Their reduction (R*S*C: 27 for a 3x3 RGB stem) is too short
// and too narrow for the implicit GEMMs (a 16-byte copy needs 8 channels of one tap, and a
// 32-deep tensor-core slice would be mostly zeros), while the output is wide: the layer is
// bound by writing it.
//
// One thread per output pixel: it gathers its R*S*C patch into registers once, then computes
// the output channels 8 at a time against weights staged in shared memory as fp32, transposed
// to [R*S*C][K] so that a tap's 8 weights are two 16-byte reads that every thread of a warp
// shares (a broadcast), and writes each 8 channels as one 16-byte store when the output allows
// it. Limits: R*S*C <= kDirectMaxPatch, K*R*S*C weights within kDirectMaxWeights, K a multiple
// of 8.
#pragma once
#include <cuda_runtime.h>

#include "fk/cuda/vec.cuh"
#include "ops/conv/conv2d_params.cuh"

namespace fk::ops::conv_cuda {

constexpr int kDirectThreads = 128, kDirectMaxPatch = 64, kDirectChunk = 8;
constexpr int kDirectMaxWeights = 8192;  // 32 KiB of fp32 shared memory
constexpr int kDirectMaxBlocks = 4096;   // each block stages the weights once, then strides over pixels

inline bool direct_conv_fits(int groups, int R, int S, int Cg, int K) {
  return groups == 1 && R * S * Cg <= kDirectMaxPatch && K % kDirectChunk == 0 &&
         static_cast<int64_t>(K) * R * S * Cg <= kDirectMaxWeights;
}

template <class T>
__global__ void __launch_bounds__(kDirectThreads) conv2d_direct_kernel(const ConvParams<T> p, const bool vec_out) {
  extern __shared__ float4 w_s4[];  // [R*S*C][K] as fp32
  float* w_s = reinterpret_cast<float*>(w_s4);
  const int patch_len = p.R * p.S * p.Cg;
  const int K = p.Kg;
  for (int i = threadIdx.x; i < K * patch_len; i += blockDim.x) {
    const int k = i / patch_len, t = i - k * patch_len;
    w_s[t * K + k] = cuda::to_float(p.weight[i]);
  }
  __syncthreads();

  for (int64_t m = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; m < p.M;
       m += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const PixelIndex px = pixel_index(m, p.P, p.Q);
    const int h0 = px.p * p.stride_h - p.pad_h, w0 = px.q * p.stride_w - p.pad_w;
    // The patch in the weights' (r, s, c) order; the counters advance with the unrolled index
    // so that the gather needs no division.
    float patch[kDirectMaxPatch];
    int c = 0, s = 0, r = 0;
#pragma unroll
    for (int i = 0; i < kDirectMaxPatch; ++i) {
      if (i < patch_len) {
        const int h = h0 + r * p.dil_h, x = w0 + s * p.dil_w;
        const bool inside = h >= 0 && h < p.in.h && x >= 0 && x < p.in.w;
        patch[i] = inside ? cuda::to_float(p.in.pixel(px.n, h, x)[c]) : 0.f;
        if (++c == p.Cg) {
          c = 0;
          if (++s == p.S) s = 0, ++r;
        }
      }
    }
    T* out = p.out.pixel(px.n, px.p, px.q);
    const T* res = p.res.p != nullptr ? p.res.pixel(px.n, px.p, px.q) : nullptr;
    for (int k0 = 0; k0 < K; k0 += kDirectChunk) {
      float acc[kDirectChunk] = {};
      static_assert(kDirectChunk == 8, "a tap's chunk of weights is two float4");
#pragma unroll
      for (int i = 0; i < kDirectMaxPatch; ++i) {
        if (i < patch_len) {
          const float4 lo = w_s4[(i * K + k0) / 4], hi = w_s4[(i * K + k0) / 4 + 1];
          acc[0] = fmaf(patch[i], lo.x, acc[0]), acc[1] = fmaf(patch[i], lo.y, acc[1]);
          acc[2] = fmaf(patch[i], lo.z, acc[2]), acc[3] = fmaf(patch[i], lo.w, acc[3]);
          acc[4] = fmaf(patch[i], hi.x, acc[4]), acc[5] = fmaf(patch[i], hi.y, acc[5]);
          acc[6] = fmaf(patch[i], hi.z, acc[6]), acc[7] = fmaf(patch[i], hi.w, acc[7]);
        }
      }
      float y[kDirectChunk];
#pragma unroll
      for (int e = 0; e < kDirectChunk; ++e) {
        const float b = p.bias != nullptr ? cuda::to_float(__ldg(p.bias + k0 + e)) : 0.f;
        y[e] = conv_epilogue(acc[e], b, p.silu, p.relu);
        if (res != nullptr) y[e] += cuda::to_float(res[k0 + e]);
      }
      if (vec_out) {
        cuda::Vec16<T> o[kDirectChunk / cuda::Vec16<T>::N];
#pragma unroll
        for (int e = 0; e < kDirectChunk; ++e)
          o[e / cuda::Vec16<T>::N].v[e % cuda::Vec16<T>::N] = cuda::from_float<T>(y[e]);
#pragma unroll
        for (int j = 0; j < kDirectChunk / cuda::Vec16<T>::N; ++j)
          cuda::store16(out + k0 + j * cuda::Vec16<T>::N, o[j]);
      } else {
#pragma unroll
        for (int e = 0; e < kDirectChunk; ++e) out[k0 + e] = cuda::from_float<T>(y[e]);
      }
    }
  }
}

}  // namespace fk::ops::conv_cuda
