// gpt_oss_layer's oracle (the CPU reference with f64 hidden, residual and caches) and the
// parts of it the op's output check recomputes from an implementation's own residual.
#pragma once
#include <cstdint>
#include <vector>

#include "fk/ops/gpt_oss_layer.h"
#include "fk/tensor.h"

namespace fk::ops {

void gpt_oss_layer_reference(const GptOssLayerArgs& a);

// The router's input and logits of tokens [t0, t0 + n) from a residual stream [T, H] of
// any dtype: x = rms_norm(residual) * post_attention_norm, logits = x @ router^T + bias,
// both f64.
struct GptOssRouterRows {
  Tensor x;       // [n, H] f64
  Tensor logits;  // [n, E] f64
};
GptOssRouterRows gpt_oss_router_rows(const GptOssLayerArgs& a, const TensorView& residual, int64_t t0, int64_t n);

// The k experts with the largest logits (ties: the lower id) of one row of logits.
std::vector<int32_t> top_k_experts(const TensorView& logits, int64_t row, int64_t k);

// Expert e's output on the row x[row] (f64): w2[e] @ act + w2_bias[e], unweighted.
std::vector<double> gpt_oss_expert_row(const GptOssLayerArgs& a, const TensorView& x, int64_t row, int32_t e);

}  // namespace fk::ops
