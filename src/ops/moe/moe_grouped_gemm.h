// fused_experts' grouped GEMM for prefill: one GEMM per expert over the expert's rows of
// the moe_align_block_size layout, on Hopper's TMA + wgmma through CUTLASS's grouped
// (pointer-array) warp-specialized kernel (moe_grouped_gemm_sm90.cuh).
//
//   d[r, :] = a[r, :] @ w[e]^T   for every row r of expert e: r in [off[e], off[e] + cnt[e])
//
// off[e] are the padded offsets moe_align_block_size leaves in its offsets scratch; cnt[e]
// is found from the sentinels that close each expert's range (the CUDA grouping puts them
// last). Rows of the range past cnt[e] are neither read nor written. The problem sizes
// stay on the device: no host sync, capturable in a CUDA graph.
#pragma once
#include <cstdint>

#include "fk/ops/moe.h"

namespace fk::ops::moe_grouped {

struct GroupedGemm {
  const void* a;  // [rows, K] rows of stride lda (16-bit, the activation type)
  int64_t lda;
  const void* w;  // [E, N, K] contiguous (the same type)
  void* d;        // [rows, N] rows of stride ldd (the same type)
  int64_t ldd;
  int64_t N, K;
  int32_t num_experts;
  const int32_t* offsets;     // [E + 1] padded offsets (moe_align_block_size)
  const int32_t* sorted_ids;  // the grouping's sorted slot ids: sentinel = num_slots
  int32_t num_slots;
  int32_t block_size;         // the grouping's block size (each range a multiple of it)
  void* scratch;              // device scratch for per-expert arguments and CUTLASS's workspace
  int64_t scratch_bytes;
};

// The scratch: fused_experts_grouped_scratch_bytes(E) (fk/ops/moe.h) suffices on a GPU of
// up to kMaxSms SMs; run_grouped_gemm checks both bounds.
inline constexpr int64_t kMaxSms = kFusedExpertsMaxSms;

// Runs one grouped GEMM on `stream` (a cudaStream_t). Act: __nv_bfloat16 or __half.
template <class Act>
void run_grouped_gemm(const GroupedGemm& g, void* stream);

}  // namespace fk::ops::moe_grouped
