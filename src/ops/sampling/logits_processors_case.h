// Test inputs shared by the logits processors' definitions: rows of logits with some -inf,
// and per-row token lists (prompt then output) whose tokens repeat, as generated text does.
#pragma once
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace fk::ops {

// [B, V] logits uniform in [-range, range), about one in 50 set to -inf (masked tokens).
Tensor processor_logits(int64_t B, int64_t V, DType dtype, float range, uint64_t seed);

struct TokenLists {
  Tensor tokens, token_indptr, prompt_len;  // i32, as ApplyPenaltiesArgs takes them
  std::vector<std::vector<int32_t>> outputs;  // each row's output, for building matching bad words
};
// Row b: a prompt of [0, max_prompt] tokens and an output of [0, max_output] tokens, drawn
// from a small part of the vocabulary (min(V, 64) ids) so that tokens repeat. The lengths
// depend on the workload only (kShapeSeed): a judge reuses a case's buffers for the inputs
// of other seeds; the tokens depend on `seed`.
inline constexpr uint64_t kShapeSeed = 0x5A3E11D5ull;
TokenLists make_token_lists(int64_t B, int64_t V, int64_t max_prompt, int64_t max_output, uint64_t seed);

// An i32 host vector from ints.
Tensor i32_tensor(const std::vector<int32_t>& v);

}  // namespace fk::ops
