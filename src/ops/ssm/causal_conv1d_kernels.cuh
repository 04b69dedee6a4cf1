// Device pieces shared by the causal_conv1d and causal_conv1d_update CUDA baselines: the
// filter of a group of kN adjacent channels held in registers, the conv-state pool's
// addressing (either slot layout, fk/ops/ssm_conv.h), and the output activation.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "fk/cuda/vec.cuh"
#include "fk/tensor_view.h"

namespace fk::ops::conv_cuda {

// The pool [S, D, W - 1] by element strides; a slot outside [0, S) is padding.
template <class T>
struct ConvStatePool {
  T* data;
  int64_t slot_stride, channel_stride, tap_stride;
  int64_t slots;

  __device__ __forceinline__ bool holds(int64_t slot) const { return slot >= 0 && slot < slots; }
  __device__ __forceinline__ T* at(int64_t slot, int64_t channel, int j) const {
    return data + slot * slot_stride + channel * channel_stride + j * tap_stride;
  }
};

template <class T>
ConvStatePool<T> state_pool(const TensorView& s) {
  return {s.ptr<T>(), s.strides[0], s.strides[1], s.strides[2], s.shape[0]};
}

// Weights and bias of channels [c0, c0 + kN) as floats.
template <class T, int kW, int kN>
struct ChannelFilter {
  float w[kN][kW];
  float b[kN];

  __device__ __forceinline__ void load(const T* weight, const T* bias, int64_t c0) {
#pragma unroll
    for (int i = 0; i < kN; ++i) {
#pragma unroll
      for (int k = 0; k < kW; ++k) w[i][k] = cuda::to_float(weight[(c0 + i) * kW + k]);
      b[i] = bias ? cuda::to_float(bias[c0 + i]) : 0.f;
    }
  }

  // Output of channel i for the window (the kW - 1 previous inputs, oldest first) and the
  // current input; fp32 with fused multiply-adds.
  __device__ __forceinline__ float apply(int i, const float (&window)[kW - 1][kN], float current, bool silu) const {
    float acc = b[i];
#pragma unroll
    for (int k = 0; k < kW - 1; ++k) acc = fmaf(w[i][k], window[k][i], acc);
    acc = fmaf(w[i][kW - 1], current, acc);
    // u < -88: expf(-u) is inf and the quotient -0, the limit.
    return silu ? acc / (1.f + expf(-acc)) : acc;
  }
};

// Shifts the window one token on: the oldest input drops out, `current` becomes the newest.
template <int kW, int kN>
__device__ __forceinline__ void shift_window(float (&window)[kW - 1][kN], const float (&current)[kN]) {
#pragma unroll
  for (int k = 0; k + 1 < kW - 1; ++k)
#pragma unroll
    for (int i = 0; i < kN; ++i) window[k][i] = window[k + 1][i];
#pragma unroll
  for (int i = 0; i < kN; ++i) window[kW - 2][i] = current[i];
}

// Calls f.template operator()<kW>() for the filter width W (2, 3 or 4: validated).
template <class F>
void dispatch_width(int64_t W, F&& f) {
  if (W == 2) f(std::integral_constant<int, 2>{});
  else if (W == 3) f(std::integral_constant<int, 3>{});
  else f(std::integral_constant<int, 4>{});
}

}  // namespace fk::ops::conv_cuda
