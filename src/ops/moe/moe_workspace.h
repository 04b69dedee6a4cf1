// The layout of fused_experts' workspace in the CUDA baseline, region by region in the
// order fused_experts_workspace_bytes (fk/ops/moe.h) counts them.
#pragma once
#include <cstdint>

#include "fk/ops/moe.h"

namespace fk::ops {

struct MoeWorkspace {
  int32_t* sorted_ids;    // [moe_align_max_padded(N, E, 128)]
  int32_t* expert_ids;    // [moe_align_max_blocks(N, E, 16)]
  int32_t* total;         // [1]
  int32_t* offsets;       // [E + 1]
  int32_t* chunk_counts;  // [ceil(N / 1024) * E]
  // 16-bit [moe_align_max_padded(N, E, 128), 2I]: the mma.sync path writes silu(gate) * up
  // as [rows, I]; the grouped path gate | up as [rows, 2I], then silu(gate) * up in place.
  void* intermediate;
  // 16-bit [moe_align_max_padded(N, E, 128), H]: the mma.sync path's weighted output of
  // every slot ([N, H]); the grouped path's hidden rows in sorted order, then the experts'
  // (unweighted) outputs in sorted order.
  void* y;
  int32_t* slot_rows;     // [N] the grouped path: sorted position of every slot (-1: none)
  void* grouped_scratch;  // [fused_experts_grouped_scratch_bytes(E)]
  int64_t end;            // bytes from `base` to the end of the last region
};

inline MoeWorkspace carve_moe_workspace(void* base, int64_t tokens, int64_t top_k, int64_t num_experts, int64_t hidden,
                                        int64_t intermediate) {
  constexpr int64_t kAlign = 256;
  auto round_up = [](int64_t x) { return (x + kAlign - 1) / kAlign * kAlign; };
  const int64_t slots = tokens * top_k;
  const int64_t padded = moe_align_max_padded(slots, num_experts, 128);
  const int64_t blocks = moe_align_max_blocks(slots, num_experts, 16);
  const int64_t chunks = (slots + 1023) / 1024;
  auto* b = static_cast<char*>(base);
  const auto misalign = static_cast<int64_t>(reinterpret_cast<uintptr_t>(b) % kAlign);
  int64_t at = (kAlign - misalign) % kAlign;  // first region 256-byte aligned
  auto take = [&](int64_t bytes) {
    char* p = b + at;
    at += round_up(bytes);
    return p;
  };
  MoeWorkspace w{};
  w.sorted_ids = reinterpret_cast<int32_t*>(take(4 * padded));
  w.expert_ids = reinterpret_cast<int32_t*>(take(4 * blocks));
  w.total = reinterpret_cast<int32_t*>(take(4 * 4));
  w.offsets = reinterpret_cast<int32_t*>(take(4 * (num_experts + 1)));
  w.chunk_counts = reinterpret_cast<int32_t*>(take(4 * chunks * num_experts));
  w.intermediate = take(2 * padded * 2 * intermediate);
  w.y = take(2 * padded * hidden);
  w.slot_rows = reinterpret_cast<int32_t*>(take(4 * slots));
  w.grouped_scratch = take(fused_experts_grouped_scratch_bytes(num_experts));
  w.end = at;
  return w;
}

}  // namespace fk::ops
