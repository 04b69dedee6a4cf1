// fused_experts' gate_up projection for prefill with silu(gate) * up in its epilogue and
// the gather of each slot's hidden row in its loads, on Hopper's TMA + wgmma
// (moe_gate_up_sm90.cu). One GEMM over the grouping's 128-row blocks
// (moe_align_block_size): block b holds rows of expert expert_ids[b] only, so a tile is
// (block b, intermediate columns [128 j, 128 j + 128)) and needs no per-expert setup.
//
//   out[r, 128 j + c] = silu(x[r] . w13[e][128 j + c]) * (x[r] . w13[e][I + 128 j + c])
//   x[r] = hidden[token of slot sorted_ids[r]]
//
// Why a kernel of our own: the tile must hold the gate and up columns of the same
// intermediate index, rows [128 j, +128) and [I + 128 j, +128) of w13[e], so that each
// thread's accumulators hold both factors of its outputs. One TMA box over a 5-d view of
// w13 (column, row in the 128, gate or up, j, expert) loads exactly that tile, which
// CUTLASS's grouped GEMM (whose B is a 2-d (N, K) view) cannot express. The epilogue then
// writes I columns instead of 2I, no separate silu pass reads and rewrites them, and the
// gathered rows (T x k x H) are never written out.
#pragma once
#include <cstdint>

namespace fk::ops::moe_grouped {

// The grouping's block size the kernel needs (moe_align_block_size with this block_size).
inline constexpr int kGateUpBlockRows = 128;

struct GateUpSilu {
  // The A rows, gathered by the kernel: row p of block b is hidden's row of the token of
  // slot sorted_ids[p]; sentinel rows read as zeros; slot_rows[slot] = p is recorded for
  // the weighted sum that follows the down projection.
  const void* hidden;          // [T, H] rows of stride ld_hidden (16-bit, 16-byte aligned rows)
  int64_t ld_hidden;
  const int32_t* sorted_ids;   // [*total] the grouping's slot ids: sentinel = num_slots
  int32_t num_slots, top_k;
  int32_t* slot_rows;          // [num_slots] (untouched for slots in no block)
  const void* w13;             // [E, 2I, H] contiguous (the same type)
  void* out;                   // [>= *total, I] contiguous (the same type)
  const int32_t* expert_ids;   // [max_blocks] the grouping's expert per 128-row block
  const int32_t* offsets;      // [E + 1] the grouping's padded offsets (multiples of 128)
  const int32_t* total;        // [1] rows in use (a multiple of 128)
  int64_t max_blocks;          // the most blocks any routing can need (the grid bound)
  int64_t E, H, I;
};

// Whether the kernel handles these sizes: I a multiple of 128 (whole gate/up column
// blocks), H a multiple of 8 (16-byte TMA row strides).
bool gate_up_silu_supported(int64_t H, int64_t I);

// Runs on `stream` (a cudaStream_t). Act: __nv_bfloat16 or __half. Capturable: the block
// count stays on the device.
template <class Act>
void run_gate_up_silu(const GateUpSilu& g, void* stream);

}  // namespace fk::ops::moe_grouped
