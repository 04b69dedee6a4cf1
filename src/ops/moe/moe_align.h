// moe_align_block_size on the host: the reference grouping (each expert's slots by
// flattened index, sentinels last) and the check that accepts any order within an
// expert's range (moe.h).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fk/tensor_view.h"

namespace fk::ops {

// Per-expert slot counts and the padded layout of moe_align_block_size.
struct AlignLayout {
  std::vector<int64_t> count;   // [E] slots routed to each expert
  std::vector<int64_t> offset;  // [E + 1] start of each expert's range; offset[E] = num_tokens_post_padded
  int64_t block_size = 1;
  int64_t total() const { return offset.back(); }
};

// ids: N expert ids (slots with ids outside [0, E) belong to no expert).
AlignLayout align_layout(const int32_t* ids, int64_t num_slots, int64_t num_experts, int64_t block_size);

// Writes the reference outputs into host i32 tensors.
void align_reference(const TensorView& sorted_token_ids, const TensorView& expert_ids,
                     const TensorView& num_tokens_post_padded, const TensorView& topk_ids, int64_t num_experts,
                     int64_t block_size);

// "" when the outputs (host tensors) are a valid grouping of topk_ids, else why not.
std::string check_align(const TensorView& topk_ids, int64_t num_experts, int64_t block_size,
                        const TensorView& sorted_token_ids, const TensorView& expert_ids,
                        const TensorView& num_tokens_post_padded);

}  // namespace fk::ops
