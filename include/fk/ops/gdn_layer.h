// Qwen3-Next's gated DeltaNet token mixer (its linear-attention sub-layer; Qwen3.5's GDN
// layers are the same), one L3 op: what the model's 36 of 48 layers run between the input
// norm and the MoE, as transformers' Qwen3NextGatedDeltaNet computes it over packed,
// variable-length sequences whose recurrent state lives in a slot pool (the engine's
// recurrent slots: one conv state and one delta-rule state per sequence and layer).
//
// Shapes: T tokens of N sequences packed back to back (sequence n owns tokens
// [cu_seqlens[n], cu_seqlens[n+1])), hidden size H, Hk key heads of size K, Hv value heads
// of size V (Hv a multiple of Hk), Dc = 2 Hk K + Hv V conv channels, W conv taps, S slots.
//
//   proj  = hidden @ in_proj^T           [T, Dc + 2 Hv]: columns [q | k | v | b | a]
//   z     = hidden @ z_proj^T            [T, Hv V]
//   mixed = SiLU(causal_conv1d(proj[:, :Dc], conv_weight, conv_state))   (ssm_conv.h)
//   g, beta = gdn_gating(a, b, a_log, dt_bias)                           (ssm_gating.h)
//   o     = gated_delta_rule(q, k, v of mixed, g, beta, ssm_state), q/k L2-normalised,
//           scale 1/sqrt(K)                                              (gated_delta.h)
//   out   = (rms_norm_gated(o, z) per value head, SiLU gate) @ out_proj^T
//
// Each part rounds its output to the dtype, as the engine's parts do. The conv and delta
// states of the call's slots are read (where has_initial_state says so) and written back.
//
// Two paths, one function: decode = 0 runs the prefill parts (causal_conv1d, the chunked
// delta rule; sequences of any length, a fresh one from zeros); decode = 1 runs the decode
// parts (causal_conv1d_update, the recurrent delta rule) and needs one token per sequence
// (T = N), every sequence continuing from its slot (has_initial_state is not read).
#pragma once
#include "fk/op.h"

namespace fk::ops {

struct GdnLayerArgs {
  static constexpr const char* kName = "gdn_layer";
  TensorView out;            // [T, H] written; bf16/f16; contiguous
  TensorView hidden;         // [T, H] read; dtype of out; contiguous (the input norm's output)
  TensorView in_proj;        // [Dc + 2 Hv, H] read; rows [q | k | v | b | a]
  TensorView z_proj;         // [Hv V, H] read
  TensorView conv_weight;    // [Dc, W] read; 2 <= W <= 4
  TensorView a_log;          // [Hv] read; f32
  TensorView dt_bias;        // [Hv] read; f32
  TensorView norm_weight;    // [V] read: the gated RMSNorm's weight, shared by the value heads
  TensorView out_proj;       // [H, Hv V] read
  TensorView conv_state;     // [S, Dc, W - 1] updated; dtype of out; layout as CausalConv1dArgs
  TensorView ssm_state;      // [S, Hv, K, V] updated; f32; each slot packed, slot stride free
  TensorView cu_seqlens;     // [N + 1] read; i32; from 0 to T
  TensorView state_indices;  // [N] read; i32; distinct slots in [0, S)
  // The same per-sequence flags in the two dtypes the parts read (the delta rule's i32, the
  // convolution's boolean; the engine keeps both): 0 = start from zeros. Optional (absent:
  // every sequence continues from its slot); present together.
  TensorView has_initial_state;       // [N] read; i32
  TensorView has_initial_state_bool;  // [N] read; boolean
  // Scratch of the parts, in the dtype but g (f32).
  TensorView proj;         // [T, Dc + 2 Hv]
  TensorView z;            // [T, Hv V]
  TensorView mixed;        // [T, Dc]
  TensorView g;            // [T, Hv] f32
  TensorView beta;         // [T, Hv]
  TensorView core;         // [T, Hv V]: the delta rule's output
  TensorView core_normed;  // [T, Hv V]
  float eps;               // the gated RMSNorm's
  int32_t decode;          // 0: prefill parts; 1: decode parts (one token per sequence)
};

}  // namespace fk::ops
