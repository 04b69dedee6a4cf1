// conv2d's depthwise kernels (one input and one output channel per group: MobileNetV4's UIR
// blocks, YOLOv10's SCDown, RepVGGDW and head), included by conv2d.cu. Memory-bound, as these
// layers are: every input pixel is read R*S times, from L1/L2 after the first.
//
// - depthwise_vec_kernel: one thread per output pixel and 16 bytes of channels (8 f16/bf16 or
//   4 f32), so a tap is one 16-byte load and a warp reads 512 consecutive bytes of a pixel row;
//   bias, residual and output move in 16-byte vectors too. The taps of a channel are read
//   through the read-only cache ([C, R, S] weights: a thread's 8 channels are R*S apart). For
//   channel counts and strides in whole vectors, the common case.
// - depthwise_kernel: one thread per output element, channels fastest (coalesced 2-byte loads);
//   any channel count or slice.
#pragma once
#include <cuda_runtime.h>

#include "fk/cuda/vec.cuh"
#include "ops/conv/conv2d_params.cuh"

namespace fk::ops::conv_cuda {

constexpr int kDwThreads = 256;

template <class T>
__global__ void __launch_bounds__(kDwThreads) depthwise_kernel(const ConvParams<T> p) {
  const int C = p.out.c;
  const int64_t total = p.M * C;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % C);
    const PixelIndex px = pixel_index(i / C, p.P, p.Q);
    const T* w = p.weight + static_cast<int64_t>(c) * p.R * p.S;
    float acc = 0.f;
    for (int r = 0; r < p.R; ++r) {
      const int h = px.p * p.stride_h - p.pad_h + r * p.dil_h;
      if (h < 0 || h >= p.in.h) continue;
      for (int s = 0; s < p.S; ++s) {
        const int x = px.q * p.stride_w - p.pad_w + s * p.dil_w;
        if (x < 0 || x >= p.in.w) continue;
        acc = fmaf(cuda::to_float(p.in.pixel(px.n, h, x)[c]), cuda::to_float(__ldg(w + r * p.S + s)), acc);
      }
    }
    const float b = p.bias != nullptr ? cuda::to_float(__ldg(p.bias + c)) : 0.f;
    float y = conv_epilogue(acc, b, p.silu, p.relu);
    if (p.res.p != nullptr) y += cuda::to_float(p.res.pixel(px.n, px.p, px.q)[c]);
    p.out.pixel(px.n, px.p, px.q)[c] = cuda::from_float<T>(y);
  }
}

template <class T>
__global__ void __launch_bounds__(kDwThreads) depthwise_vec_kernel(const ConvParams<T> p) {
  constexpr int V = cuda::Vec16<T>::N;
  const int vecs = p.out.c / V;  // channel vectors per pixel
  const int taps = p.R * p.S;
  const int64_t total = p.M * vecs;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % vecs) * V;
    const PixelIndex px = pixel_index(i / vecs, p.P, p.Q);
    const T* w = p.weight + static_cast<int64_t>(c) * taps;
    float acc[V] = {};
    for (int r = 0; r < p.R; ++r) {
      const int h = px.p * p.stride_h - p.pad_h + r * p.dil_h;
      if (h < 0 || h >= p.in.h) continue;
      for (int s = 0; s < p.S; ++s) {
        const int x = px.q * p.stride_w - p.pad_w + s * p.dil_w;
        if (x < 0 || x >= p.in.w) continue;
        const cuda::Vec16<T> v = cuda::load16(p.in.pixel(px.n, h, x) + c);
        const int tap = r * p.S + s;
#pragma unroll
        for (int e = 0; e < V; ++e)
          acc[e] = fmaf(cuda::to_float(v.v[e]), cuda::to_float(__ldg(w + e * taps + tap)), acc[e]);
      }
    }
    cuda::Vec16<T> res;  // a coherent load: the residual may be the output's own buffer
    if (p.res.p != nullptr) res = *reinterpret_cast<const cuda::Vec16<T>*>(p.res.pixel(px.n, px.p, px.q) + c);
    cuda::Vec16<T> o;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      const float b = p.bias != nullptr ? cuda::to_float(__ldg(p.bias + c + e)) : 0.f;
      float y = conv_epilogue(acc[e], b, p.silu, p.relu);
      if (p.res.p != nullptr) y += cuda::to_float(res.v[e]);
      o.v[e] = cuda::from_float<T>(y);
    }
    cuda::store16(p.out.pixel(px.n, px.p, px.q) + c, o);
  }
}

}  // namespace fk::ops::conv_cuda
