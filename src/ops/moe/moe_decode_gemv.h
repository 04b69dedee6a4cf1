// fused_experts' decode path on the CUDA baseline (bf16 / f16 weights, a few tokens): no
// grouping and no GEMM tiles, every routed slot's expert rows streamed once by warps
// spread over the whole GPU, like a dense decode GEMV:
//   1. inter[s, i] = silu(w13[e, i] . x_t) * (w13[e, I + i] . x_t)   for slot s = t * k + j, e = topk_ids[s]
//   2. out[t, h]   = sum_j topk_weights[t, j] * (w2[e_j, h] . inter[t * k + j])   (j in order)
// fp32 dot products, inter rounded to 16 bits (as the grouped paths do); the sum over the
// token's experts happens in registers and shared memory in a fixed order, so there is no
// combine pass and no atomics. Both kernels use programmatic dependent launch: the down
// kernel's first weight loads stream while gate_up still runs.
#pragma once
#include <cuda_runtime.h>

#include "fk/ops/moe.h"
#include "ops/moe/moe_validate.h"
#include "ops/moe/moe_workspace.h"

namespace fk::ops::moe_decode {

// Tokens up to which the GEMV path runs (more tokens share experts: the tiled kernels
// read each expert's weights once for all of them).
inline constexpr int64_t kMaxTokens = 4;

// Whether the GEMV path runs: at most kMaxTokens tokens, 16-bit weights, and fused_experts'
// variant tiled_decode not selected (it keeps the tiled kernel, for A/B runs).
bool use_decode_gemv(const FusedExpertsShape& sh);

// Act: __nv_bfloat16 or __half. Uses the workspace's intermediate region as [T * k, I].
template <class Act>
void run_decode_gemv(const FusedExpertsArgs& a, const FusedExpertsShape& sh, const MoeWorkspace& ws,
                     cudaStream_t stream);

}  // namespace fk::ops::moe_decode
