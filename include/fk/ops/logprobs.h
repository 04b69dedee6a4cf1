// Log-probabilities of sampled tokens and of the most likely alternatives. Shapes beside
// each field: N rows (requests that asked for logprobs), V vocabulary size, K alternatives.
#pragma once
#include "fk/op.h"

namespace fk::ops {

// The largest K the op takes (OpenAI's limit for logprobs / top_logprobs).
inline constexpr int kMaxTopLogprobs = 20;

// Per row n, with x = logits[n, :] (the raw distribution: after the model's final logit
// soft-capping, before any temperature or filter of the sampler):
//
//  lse                = log(sum_v exp(x_v)); -inf logits contribute nothing.
//  sampled_logprob[n] = x[sampled_ids[n]] - lse
//  topk_ids[n, :]     = the first K tokens in rank order: logit descending, ties by token
//                       id ascending (the order of the `sample` op, fk/ops/sampling.h)
//  topk_logprobs[n, j]= x[topk_ids[n, j]] - lse, so non-increasing along j
//
// K = topk_ids.shape[1] in [0, min(kMaxTopLogprobs, V)]; K = 0 computes the sampled
// token's logprob alone. A -inf logit has logprob -inf (it still takes its place in rank
// order, after every finite logit).
//
// Valid input: logits finite or -inf, at least one finite logit per row, sampled ids in
// [0, V). The CPU reference reports anything else as an error naming the row. The CUDA
// baseline does not read values back to the host: it writes NaN for the sampled logprob of
// an id outside [0, V), and NaN logprobs for a row without a finite logit.
struct ComputeLogprobsArgs {
  static constexpr const char* kName = "compute_logprobs";
  TensorView sampled_logprob;  // [N] written; f32
  TensorView topk_ids;         // [N, K] written; i32; contiguous
  TensorView topk_logprobs;    // [N, K] written; f32; contiguous
  TensorView logits;           // [N, V] read; f32/bf16; rows contiguous (row stride free)
  TensorView sampled_ids;      // [N] read; i64 (the `sample` op's output)
};

}  // namespace fk::ops
