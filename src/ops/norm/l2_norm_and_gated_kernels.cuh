// Row kernels of l2_norm and rms_norm_gated, whose production rows are short (one head:
// 128 elements at Qwen3-Next and Kimi-Linear), so a row goes to a group of lanes rather
// than a block: tpr lanes (a power of two <= 32) per row, 128 / tpr rows per block,
// reduced by shuffles inside the group (no shared memory, no barrier).
// - In registers (rows of at most 4 x 32 vectors): each lane loads its up to kV vectors
//   of the row (and of the gate) before the reduction, then scales and stores them.
// - Looped (longer rows, kV = 0): a warp per row, the row streamed twice (the second read
//   mostly from L1/L2).
// Vectors are 16 bytes where the row length, strides and pointers allow, else single
// elements (kN = 1). fp32 math, rounded once to the dtype.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"

namespace fk::ops::row_norm_cuda {

inline constexpr int kBlockThreads = 128;
inline constexpr int kMaxVecsPerLane = 4;

template <class T>
struct RowNormParams {
  T* out;
  int64_t out_stride;
  const T* in;
  int64_t in_stride;
  const T* gate;  // rms_norm_gated only
  int64_t gate_stride;
  const T* weight;  // rms_norm_gated only
  int64_t rows;
  int H;
  float eps;
  int sigmoid_gate;  // the gate's activation: 1 sigmoid, 0 SiLU
  int threads_per_row;
};

// kGated: rms_norm_gated (rsqrt of the mean square plus eps, times weight and act(gate));
// else l2_norm (rsqrt of the sum of squares plus eps).
template <bool kGated, class T>
__device__ __forceinline__ float inverse_norm(const RowNormParams<T>& p, float sum_sq) {
  return kGated ? rsqrtf(sum_sq / static_cast<float>(p.H) + p.eps) : rsqrtf(sum_sq + p.eps);
}

__device__ __forceinline__ float gate_activation(float g, int sigmoid_gate) {
  const float s = 1.f / (1.f + expf(-g));  // g < -88: expf overflows to inf, s is 0, the limit
  return sigmoid_gate ? s : g * s;
}

template <class T, int kN>
__device__ __forceinline__ float sum_of_squares(const cuda::PackedVec<T, kN>& v) {
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < kN; ++k) acc = fmaf(cuda::unpack(v, k), cuda::unpack(v, k), acc);
  return acc;
}

// One output vector at element offset e of the row.
template <bool kGated, class T, int kN>
__device__ __forceinline__ void store_scaled(const RowNormParams<T>& p, int64_t row, int e,
                                             const cuda::PackedVec<T, kN>& x, float inv) {
  float y[kN];
  if constexpr (kGated) {
    const auto w = cuda::load_packed_ro<kN>(p.weight + e);
    const auto g = cuda::load_packed_ro<kN>(p.gate + row * p.gate_stride + e);
#pragma unroll
    for (int k = 0; k < kN; ++k)
      y[k] = cuda::unpack(x, k) * inv * cuda::unpack(w, k) * gate_activation(cuda::unpack(g, k), p.sigmoid_gate);
  } else {
#pragma unroll
    for (int k = 0; k < kN; ++k) y[k] = cuda::unpack(x, k) * inv;
  }
  cuda::store_packed<kN>(p.out + row * p.out_stride + e, cuda::pack<T, kN>(y));
}

// Sum over the tpr lanes of a row's group (aligned, a power of two <= 32). Every lane of
// the warp takes part.
__device__ __forceinline__ float group_sum(float v, int tpr) {
  for (int o = tpr >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <bool kGated, class T, int kN, int kV>
__global__ void __launch_bounds__(kBlockThreads) row_norm_kernel(const RowNormParams<T> p) {
  using V = cuda::PackedVec<T, kN>;
  const int tpr = p.threads_per_row;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (kBlockThreads / tpr) + threadIdx.x / tpr;
  const int lane = threadIdx.x % tpr;
  const bool active = row < p.rows;  // spare groups stay for the shuffles
  const int num_vec = p.H / kN;
  const T* x_row = p.in + row * p.in_stride;
  float acc = 0.f;
  if constexpr (kV > 0) {
    V x[kV];
#pragma unroll
    for (int c = 0; c < kV; ++c) {
      const int i = lane + c * tpr;
      x[c] = active && i < num_vec ? cuda::load_packed_ro<kN>(x_row + i * kN) : V{};
      acc += sum_of_squares(x[c]);
    }
    const float inv = inverse_norm<kGated>(p, group_sum(acc, tpr));
#pragma unroll
    for (int c = 0; c < kV; ++c) {
      const int i = lane + c * tpr;
      if (active && i < num_vec) store_scaled<kGated>(p, row, i * kN, x[c], inv);
    }
  } else {
    if (active)
      for (int i = lane; i < num_vec; i += tpr) acc += sum_of_squares(cuda::load_packed_ro<kN>(x_row + i * kN));
    const float inv = inverse_norm<kGated>(p, group_sum(acc, tpr));
    if (active)
      for (int i = lane; i < num_vec; i += tpr) store_scaled<kGated>(p, row, i * kN, cuda::load_packed_ro<kN>(x_row + i * kN), inv);
  }
}

template <bool kGated, class T, int kN>
void launch_with_vector(RowNormParams<T> p, cudaStream_t stream) {
  const int num_vec = p.H / kN;
  int kv = 0;  // looped
  if (num_vec <= 32 * kMaxVecsPerLane) kv = num_vec <= 8 ? 1 : num_vec <= 64 ? 2 : 4;
  int tpr = 32;
  if (kv > 0) {
    tpr = 1;
    while (tpr < 32 && tpr * kv < num_vec) tpr *= 2;
  }
  p.threads_per_row = tpr;
  const dim3 grid(static_cast<unsigned>(cuda::ceil_div(p.rows, kBlockThreads / tpr)));
  switch (kv) {
    case 1: row_norm_kernel<kGated, T, kN, 1><<<grid, kBlockThreads, 0, stream>>>(p); break;
    case 2: row_norm_kernel<kGated, T, kN, 2><<<grid, kBlockThreads, 0, stream>>>(p); break;
    case 4: row_norm_kernel<kGated, T, kN, 4><<<grid, kBlockThreads, 0, stream>>>(p); break;
    default: row_norm_kernel<kGated, T, kN, 0><<<grid, kBlockThreads, 0, stream>>>(p); break;
  }
  FK_CUDA_CHECK_LAUNCH();
}

// Picks 16-byte vectors when every row and pointer allows them, else single elements.
template <bool kGated, class T>
void launch_row_norm(const RowNormParams<T>& p, cudaStream_t stream) {
  if (p.rows == 0) return;
  constexpr int N = 16 / static_cast<int>(sizeof(T));
  const bool vec_ok = p.H % N == 0 && p.in_stride % N == 0 && p.out_stride % N == 0 &&
                      (!kGated || p.gate_stride % N == 0) && cuda::all_aligned16(p.out, p.in, p.gate, p.weight);
  if (vec_ok) launch_with_vector<kGated, T, N>(p, stream);
  else launch_with_vector<kGated, T, 1>(p, stream);
}

}  // namespace fk::ops::row_norm_cuda
