// Token sampling. Shapes beside each field: B rows (requests), V vocabulary size.
#pragma once
#include "fk/op.h"

namespace fk::ops {

// out[b] = one token drawn from logits[b, :] with row b's parameters. Per row, with
// x = logits[b, :]:
//
//  rank order  tokens sorted by x descending, ties by token id ascending. Every filter
//              keeps a prefix of this order, and the draw walks it.
//  greedy      temperature == 0: out = the first token in rank order (argmax, lowest id
//              on ties). The other parameters are ignored.
//  weights     temperature T > 0: w_v = exp((x_v - max(x)) / T), the softmax numerators
//              of the scaled logits (p_v = w_v / sum(w)). Then, in this order:
//  1. top-k    0 < top_k < V: keep the first top_k tokens. top_k = 0 or >= V: off.
//  2. top-p    top_p < 1: with Z = the sum of w over the top-k survivors, keep a survivor
//              iff the w-mass of the survivors ranked before it is <= top_p * Z (the
//              shortest prefix whose mass exceeds top_p * Z). top_p = 1: off.
//  3. min-p    min_p > 0: keep survivors with p_v >= min_p * p_max, i.e. w_v >= min_p.
//              (Relative to the most likely token, so it is the same set before or after
//              top-k; it applies after top-p.) min_p = 0: off.
//  4. draw     u = philox_uniform(seed[b], offset[b], 0) in [0, 1) (fk/philox.h, so CPU
//              and GPU draw the same u). With survivors s_1, s_2, ... in rank order and Z
//              their total w: out = the first s_i with w_{s_1} + ... + w_{s_i} > u * Z.
//              (Should rounding leave none, the last survivor with w > 0.)
// The top token always survives, and tokens with w = 0 (logit -inf, or underflow) are never
// drawn. top_k = 1, or a top_p below the top token's probability, gives the greedy token.
// The offset is the request's step: a new (seed, offset) pair for every token drawn.
//
// Valid parameters: 0 <= temperature (finite), top_k >= 0, 0 < top_p <= 1,
// 0 <= min_p <= 1; logits finite or -inf with at least one finite logit per sampled row.
// The CPU reference reports invalid values as errors. The CUDA baseline does not read
// parameters back to the host; it treats temperature <= 0 or NaN as greedy, top_k <= 0 as
// off, top_p >= 1 or NaN as off, top_p <= 0 as greedy, min_p <= 0 or NaN as off and
// min_p > 1 as 1, and gives the greedy token for a row without a finite maximum.
struct SampleArgs {
  static constexpr const char* kName = "sample";
  TensorView out;          // [B] written; i64 token ids
  TensorView logits;       // [B, V] read; f32/bf16; rows contiguous (row stride free)
  TensorView temperature;  // [B] read; f32; 0 = greedy
  TensorView top_k;        // [B] read; i32; 0 (or >= V) = off
  TensorView top_p;        // [B] read; f32; 1 = off
  TensorView min_p;        // [B] read; f32; 0 = off
  TensorView seed;         // [B] read; i64; Philox key of the request
  TensorView offset;       // [B] read; i64; Philox offset (the request's step)
};

}  // namespace fk::ops
