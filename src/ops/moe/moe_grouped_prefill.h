// fused_experts' prefill path on the CUDA baseline (bf16 / f16 weights): the slots are
// grouped by expert (moe_align_block_size, 128-row blocks); gate_up with silu(gate) * up
// in its epilogue, gathering each slot's hidden row itself (moe_gate_up.h; or, for wide
// experts, a gather pass, a grouped GEMM and a silu pass); the down projection as a
// grouped GEMM on Hopper's TMA + wgmma (moe_grouped_gemm.h); and the weighted sum over
// each token's experts.
#pragma once
#include <cuda_runtime.h>

#include "fk/ops/moe.h"
#include "ops/moe/moe_validate.h"
#include "ops/moe/moe_workspace.h"

namespace fk::ops::moe_grouped {

// Whether the grouped path runs for N = T * k slots over E experts: prefill-sized groups
// (the 128-row blocks of the mma.sync kernel), 16-bit weights, and fused_experts' variant
// no_grouped_gemm not selected (it keeps the mma.sync kernel, for A/B runs).
bool use_grouped_prefill(const FusedExpertsShape& sh);

// Act: __nv_bfloat16 or __half.
template <class Act>
void run_grouped_prefill(const FusedExpertsArgs& a, const FusedExpertsShape& sh, const MoeWorkspace& ws,
                         cudaStream_t stream);

}  // namespace fk::ops::moe_grouped
