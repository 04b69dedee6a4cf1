// Short causal convolutions of the state-space and linear-attention LLMs (Qwen3-Next's
// gated DeltaNet, Mamba, Mamba2, Jamba, Kimi-Linear): a depthwise convolution over time,
// one filter of W taps per channel, that sees only the current and the W - 1 previous
// tokens of its own sequence. Shapes beside each field: T tokens (packed), D channels,
// W taps (2..4), B sequences, S state slots.
//
// Layout: token-major, x[t, d] (each token's channels contiguous), as the engine keeps
// activations and as vLLM hands them over (its x is the [D, T] transpose of a [T, D]
// buffer, so the memory is the same). A token's D channels are then one contiguous read.
//
// Conv state: the last W - 1 inputs of a sequence, per channel, oldest first:
// conv_state[slot, d, W - 2] is the newest. It lives in a pool of S slots shared by all
// sequences (the recurrent slots of the engine); a sequence names its slot in
// state_indices. Logical shape [S, D, W - 1] (causal-conv1d's and vLLM's conv_states); the
// slot stride is free and a slot is stored either as [D, W - 1] (stride W - 1, 1) or as its
// transpose [W - 1, D] (stride 1, D: vLLM's current layout, token-major like x).
//
// A slot index < 0 marks a padding sequence (vLLM's PAD_SLOT_ID is -1): its outputs are
// computed as for a fresh sequence (zeros before its first token) and no state is read or
// written. (vLLM leaves a padding sequence's outputs unwritten; here every output is
// written, so a caller may read them, e.g. under a CUDA graph padded to a batch size.)
//
// Math: out[t, d] = act(bias[d] + sum_k weight[d, k] * u[t - W + 1 + k, d]) where u is the
// sequence's input preceded by its initial state; accumulated in fp32 (CUDA) or double (CPU
// reference) and rounded once to the dtype; act is SiLU (u / (1 + exp(-u))) or identity.
//
// Valid input (the CPU reference reports each violation as an error; the CUDA baselines
// cannot without a host sync, so they treat a slot >= S as padding, never touching memory
// outside the pool, and do not detect the rest): cu_seqlens non-decreasing from 0 to T,
// no two sequences of a call naming the same slot.
#pragma once
#include "fk/op.h"

namespace fk::ops {

// Prefill (causal-conv1d's causal_conv1d_fn with varlen sequences; vLLM's causal_conv1d_fn
// with query_start_loc, cache_indices and has_initial_state). Sequence b owns tokens
// [cu_seqlens[b], cu_seqlens[b + 1]) of x (possibly none). It starts from the state of its
// slot when has_initial_state[b] (a continued chunk of a chunked prefill), else from zeros
// (a fresh sequence). Afterwards its slot holds the last W - 1 inputs of the sequence
// preceded by that initial state: for a sequence shorter than W - 1 tokens, the newest
// inputs of the initial state shift along.
struct CausalConv1dArgs {
  static constexpr const char* kName = "causal_conv1d";
  TensorView out;                // [T, D] written; dtype of x; rows contiguous (row stride free)
  TensorView x;                  // [T, D] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView weight;             // [D, W] read; dtype of x; contiguous; 2 <= W <= 4
  TensorView bias;               // [D] read; dtype of x; optional (absent: no bias)
  TensorView conv_state;         // [S, D, W - 1] updated; dtype of x; see the header's layout rules
  TensorView cu_seqlens;         // [B + 1] read; i32; cu_seqlens[0] = 0, cu_seqlens[B] = T
  TensorView state_indices;      // [B] read; i32; the slot of each sequence, < 0: padding
  TensorView has_initial_state;  // [B] read; bool; optional (absent: every sequence is fresh)
  int32_t silu;                  // 1: SiLU on the output (vLLM's activation "silu"/"swish"); 0: none
};

// Decode (causal-conv1d's / vLLM's causal_conv1d_update): N new tokens of each of B
// sequences (N = 1 for plain decode, N > 1 for speculative decoding's draft tokens, taken
// in order). Each sequence continues from its slot's state, which is updated in place to
// its last W - 1 inputs; N single-token calls give what one call with N tokens gives.
struct CausalConv1dUpdateArgs {
  static constexpr const char* kName = "causal_conv1d_update";
  TensorView out;            // [B, D] or [B, N, D] written; dtype and shape of x; last dim contiguous
  TensorView x;              // [B, D] or [B, N, D] read; f32/f16/bf16; last dim contiguous, other strides free
  TensorView weight;         // [D, W] read; dtype of x; contiguous; 2 <= W <= 4
  TensorView bias;           // [D] read; dtype of x; optional (absent: no bias)
  TensorView conv_state;     // [S, D, W - 1] updated; dtype of x; layout as CausalConv1dArgs
  TensorView state_indices;  // [B] read; i32; the slot of each sequence, < 0: padding
  int32_t silu;              // 1: SiLU on the output; 0: none
};

}  // namespace fk::ops
