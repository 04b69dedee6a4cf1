// Attention sinks (gpt-oss): a learned logit per query head that joins the softmax
// denominator without contributing a value. transformers' GptOssAttention appends
// sinks[h] as one more column of every row of scaled scores before the softmax and drops
// that column after it; FlashInfer and vLLM take the same per-head "sinks" / "s_aux".
//
// An attention op that reports the row's log-sum-exp (fk/ops/attention.h: lse, base 2)
// gives everything needed to add the sink afterwards: with S = sum_j exp(s_j) = 2^lse,
//   out_with_sink = out * S / (S + exp(sink)) = out * sigmoid(lse * ln 2 - sink),
// one scale per (token, head). A row that sees no key (lse = -inf) stays all zero.
#pragma once
#include "fk/op.h"

namespace fk::ops {

// out[t, h, :] *= sigmoid(lse[t, h] * ln(2) - sinks[h]), in place. Computed in double (CPU
// reference) or f32 and rounded once to out's dtype.
struct AttentionSinkRescaleArgs {
  static constexpr const char* kName = "attention_sink_rescale";
  TensorView out;    // [T, Hq, D] updated: the attention output without the sink in, with it out;
                     //            f32/f16/bf16; heads and head dims packed, row stride free
  TensorView lse;    // [T, Hq] read; f32; base-2 log-sum-exp of each row's scaled scores
                     //         (what the attention ops write); contiguous
  TensorView sinks;  // [Hq] read; f32: the per-head sink logits
};

}  // namespace fk::ops
