// The element-wise gates of Qwen3-Next's layers, as transformers' Qwen3NextGatedDeltaNet
// and Qwen3NextAttention compute them (vLLM fuses the first as fused_gdn_gating).
// Shapes: T tokens (packed), Hv value heads, N columns.
#pragma once
#include "fk/op.h"

namespace fk::ops {

// The gated delta rule's decay and write strength from the in_proj_ba outputs a and b:
//   g[t, h]    = -exp(A_log[h]) * softplus(a[t, h] + dt_bias[h])      (f32)
//   beta[t, h] = sigmoid(b[t, h])                                     (rounded to beta's dtype)
// softplus(x) = log(1 + exp(x)), and x itself above 20 (torch's threshold). Computed in
// double (CPU reference) or f32 and rounded once.
struct GdnGatingArgs {
  static constexpr const char* kName = "gdn_gating";
  TensorView g;        // [T, Hv] written; f32; contiguous
  TensorView beta;     // [T, Hv] written; f32 or dtype of a; contiguous
  TensorView a;        // [T, Hv] read; f32/f16/bf16; row stride free
  TensorView b;        // [T, Hv] read; dtype of a; row stride free
  TensorView a_log;    // [Hv] read; f32
  TensorView dt_bias;  // [Hv] read; f32
};

// The output gate of Qwen3-Next's full attention: out = input * sigmoid(gate), per element,
// computed in double (CPU reference) or f32 and rounded once.
struct SigmoidMulArgs {
  static constexpr const char* kName = "sigmoid_mul";
  TensorView out;    // [T, N] written; dtype of input; rows contiguous (row stride free)
  TensorView input;  // [T, N] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView gate;   // [T, N] read; dtype of input; rows contiguous (row stride free)
};

}  // namespace fk::ops
