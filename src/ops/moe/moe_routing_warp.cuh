// Top-k routing of one token by one warp, the math of the routing kernels (moe_routing.cu).
//
// A lane holds experts lane, lane + 32, ... (register i: expert lane + 32 * i) and the
// warp agrees on every result. Entries of experts >= E are ignored, so any kVpl >= E / 32
// gives the same bits: a longer register row only adds zeros to the lanes' sums.
#pragma once
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>

#include "fk/cuda/vec.cuh"

namespace fk::ops::moe_route {

// An unsigned key that orders as the floats do: -0 and +0 get one key (they compare equal),
// NaN the lowest (it never wins, as with the comparisons it replaces).
__device__ __forceinline__ uint32_t float_order_key(float v) {
  if (v != v) return 0u;
  const uint32_t b = __float_as_uint(v == 0.f ? 0.f : v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

// Argmax over the warp of (v, idx): larger v, then smaller idx. Every lane gets the result.
// Two warp reductions in hardware (redux.sync: the largest key, then the smallest index
// among the lanes that hold it) instead of five rounds of two shuffles: the top-k's k
// rounds of this are the routing's critical path at decode batch sizes.
__device__ __forceinline__ void warp_argmax(float& v, int& idx) {
  const uint32_t key = float_order_key(v);
  const uint32_t best = __reduce_max_sync(0xffffffffu, key);
  idx = static_cast<int>(__reduce_min_sync(0xffffffffu, key == best ? static_cast<uint32_t>(idx) : 0xffffffffu));
  v = __uint_as_float((best & 0x80000000u) ? (best & 0x7fffffffu) : ~best);
}

// s = softmax of the logits in s (fp32), 0 for experts >= E.
template <int kVpl>
__device__ __forceinline__ void softmax_scores(float (&s)[kVpl], int E, int lane) {
  float m = -INFINITY;
#pragma unroll
  for (int i = 0; i < kVpl; ++i) m = fmaxf(m, lane + 32 * i < E ? s[i] : -INFINITY);
  m = cuda::warp_max(m);
  float sum = 0.f;
#pragma unroll
  for (int i = 0; i < kVpl; ++i) {
    s[i] = lane + 32 * i < E ? expf(s[i] - m) : 0.f;
    sum += s[i];
  }
  const float inv = 1.f / cuda::warp_sum(sum);
#pragma unroll
  for (int i = 0; i < kVpl; ++i) s[i] *= inv;
}

// s = sigmoid of the logits in s, 0 for experts >= E.
template <int kVpl>
__device__ __forceinline__ void sigmoid_scores(float (&s)[kVpl], int E, int lane) {
#pragma unroll
  for (int i = 0; i < kVpl; ++i) s[i] = lane + 32 * i < E ? 1.f / (1.f + expf(-s[i])) : 0.f;
}

// k rounds of a warp argmax over the choice scores c (consumed: chosen experts become
// -inf; ties go to the lower expert). Lane 0 writes ids[j] and weights[j] = s of the j-th
// expert, times scale / (their sum) when renormalize != 0, else times scale. The caller
// syncs the warp before other lanes read what lane 0 wrote.
template <int kVpl>
__device__ __forceinline__ void select_topk(float (&c)[kVpl], const float (&s)[kVpl], int E, int k, int renormalize,
                                            float scale, float* weights, int32_t* ids, int lane) {
  float weight_sum = 0.f;
  for (int j = 0; j < k; ++j) {
    float v = -INFINITY;
    int idx = INT_MAX;
#pragma unroll
    for (int i = 0; i < kVpl; ++i) {  // ascending experts: strict > keeps the lower index on ties
      const int e = lane + 32 * i;
      if (e < E && (c[i] > v || idx == INT_MAX)) {
        v = c[i];
        idx = e;
      }
    }
    warp_argmax(v, idx);
    const int owner = idx & 31, slot = idx >> 5;
    float chosen_s = 0.f;
#pragma unroll
    for (int i = 0; i < kVpl; ++i)
      if (i == slot) {
        chosen_s = s[i];
        if (lane == owner) c[i] = -INFINITY;
      }
    chosen_s = __shfl_sync(0xffffffffu, chosen_s, owner);
    weight_sum += chosen_s;
    if (lane == 0) {
      ids[j] = idx;
      weights[j] = chosen_s;
    }
  }
  if (lane == 0) {
    const float norm = renormalize && weight_sum > 0.f ? scale / weight_sum : scale;
    for (int j = 0; j < k; ++j) weights[j] *= norm;
  }
}

// moe_topk_softmax of one token whose logits are in s (destroyed).
template <int kVpl>
__device__ __forceinline__ void softmax_topk(float (&s)[kVpl], int E, int k, int renormalize, float* weights,
                                             int32_t* ids, int lane) {
  softmax_scores(s, E, lane);
  float c[kVpl];
#pragma unroll
  for (int i = 0; i < kVpl; ++i) c[i] = lane + 32 * i < E ? s[i] : -INFINITY;
  select_topk(c, s, E, k, renormalize, 1.f, weights, ids, lane);
}

}  // namespace fk::ops::moe_route
