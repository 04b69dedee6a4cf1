// Where the decode GEMV kernels (moe_decode_gemv.cu) get a token's experts and routing
// weights: from a routing kernel that ran before them (fused_experts), or computed by each
// warp from the token's router logits (fused_moe: no routing kernel at all).
//
// A routing source `R` gives, for token t, a TokenRouting read by the whole warp:
//   typename R::Scratch                        per-warp shared memory the source may use
//   TokenRouting R::token(t, scratch, lane)    called by every lane of the warp
//   TokenRouting R::token_in(scratch)          what token() left in scratch, for other warps
//   void R::publish(slot, j, routing)          one thread writes slot (t, j)'s routing out
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "fk/cuda/vec.cuh"
#include "fk/dtype.h"
#include "ops/moe/moe_routing_warp.cuh"

namespace fk::ops::moe_decode {

// Experts per token up to which the GEMV kernels route in-kernel (per-warp shared scratch).
inline constexpr int kMaxRoutedTopk = 32;

struct TokenRouting {
  const int32_t* ids;    // [k]
  const float* weights;  // [k]
};

// The routing kernel's output, in global memory ([T, k] ids and weights).
struct GivenRouting {
  struct Scratch {};
  static constexpr bool kFitsRegisterBudget = true;  // the GEMV kernels' bounds (moe_decode_gemv.cu)
  const int32_t* ids;
  const float* weights;
  int top_k;

  __device__ __forceinline__ TokenRouting token(int t, Scratch&, int) const {
    const int64_t row = static_cast<int64_t>(t) * top_k;
    return {ids + row, weights + row};
  }
  __device__ __forceinline__ void publish(int, int, const TokenRouting&) const {}  // already written
  __device__ __forceinline__ TokenRouting token_in(Scratch&) const { return {ids, weights}; }  // unused
};

// moe_topk_softmax of the token from its logits row, by one warp (moe_routing_warp.cuh:
// the routing kernel's own math, so the same bits), into the warp's scratch. kVpl >=
// E / 32 registers a lane.
template <int kVpl>
struct SoftmaxRouting {
  struct Scratch {
    int32_t ids[kMaxRoutedTopk];
    float weights[kMaxRoutedTopk];
  };
  // Up to 128 experts the top-k fits the GEMV kernels' register bounds; 32 logits a lane
  // (more experts) would spill hundreds of bytes under them.
  static constexpr bool kFitsRegisterBudget = kVpl <= 4;
  const void* logits;  // [T, E], row stride ld
  int64_t ld;
  DType dtype;  // f32, f16 or bf16
  int E, top_k, renormalize;
  float* topk_weights;  // [T, k] outputs of the op
  int32_t* topk_ids;

  template <class In>
  __device__ __forceinline__ void load_row(float (&s)[kVpl], int t, int lane) const {
    const In* row = static_cast<const In*>(logits) + static_cast<int64_t>(t) * ld;
#pragma unroll
    for (int i = 0; i < kVpl; ++i) {
      const int e = lane + 32 * i;
      s[i] = e < E ? cuda::to_float(row[e]) : -INFINITY;
    }
  }

  __device__ __forceinline__ TokenRouting token(int t, Scratch& scratch, int lane) const {
    float s[kVpl];
    if (dtype == DType::f32) load_row<float>(s, t, lane);
    else if (dtype == DType::f16) load_row<__half>(s, t, lane);
    else load_row<__nv_bfloat16>(s, t, lane);
    moe_route::softmax_topk(s, E, top_k, renormalize, scratch.weights, scratch.ids, lane);
    __syncwarp();  // lane 0 wrote the scratch
    return token_in(scratch);
  }
  // The routing a warp of this CTA computed into `scratch` (after a barrier).
  __device__ __forceinline__ TokenRouting token_in(Scratch& scratch) const { return {scratch.ids, scratch.weights}; }

  __device__ __forceinline__ void publish(int slot, int j, const TokenRouting& r) const {
    topk_ids[slot] = r.ids[j];
    topk_weights[slot] = r.weights[j];
  }
};

}  // namespace fk::ops::moe_decode
