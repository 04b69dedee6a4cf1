// The CUDA grouping of slots by expert (moe_align_block_size), shared by the op and by
// fused_experts. Kernels only: no allocation, copy or synchronisation (capturable).
#pragma once
#include <cstdint>

namespace fk::ops::moe_cuda {

// Largest expert count the CUDA grouping handles (per-expert counters in shared memory).
inline constexpr int kAlignMaxExperts = 4096;

struct AlignOutputs {
  int32_t* sorted_token_ids;  // [sorted_len]
  int64_t sorted_len;
  int32_t* expert_ids;        // [num_blocks]
  int64_t num_blocks;
  int32_t* total;             // [1] num_tokens_post_padded
  // [E + 1] the padded offsets off[e] (fk/ops/moe.h), written on every path (fused_experts'
  // grouped GEMM reads them), and scratch: [ceil(N / 1024) * E] per-chunk counts.
  int32_t* offsets;
  int32_t* chunk_counts;
};

// Groups the N = num_slots entries of ids (moe.h, MoeAlignBlockSizeArgs) on `stream`
// (a cudaStream_t): each expert's slots in increasing slot order, sentinels last (the
// grouped GEMM of fused_experts relies on that: expert e's rows are the first cnt[e] of its range).
void launch_align(const int32_t* ids, int64_t num_slots, int num_experts, int block_size, const AlignOutputs& out,
                  void* stream);

}  // namespace fk::ops::moe_cuda
