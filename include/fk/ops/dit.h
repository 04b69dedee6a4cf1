// Ops of diffusion transformers (DiT / MMDiT: FLUX.1, SD3, HunyuanVideo; the axial DiT of the
// Oasis world model): the conditioning activation, the adaLN modulation and gated residual
// around every block, and the token reordering between spatial and temporal attention.
// Shapes beside each field: T tokens (packed, B samples of L = T / B consecutive tokens
// each), H hidden.
//
// Common rules:
// - Dtypes: f32, f16 or bf16; every tensor has the dtype of input. Math is fp32 (CUDA) or
//   double (CPU reference), rounded once to the output dtype.
// - "rows contiguous": the last dimension has stride 1; the row stride is free (the
//   modulation vectors are slices of one [B, k*H] linear output: shift, scale, gate).
// - A per-sample vector [B, H] applies to the L = T / B tokens of its sample: token t uses
//   row t / L. T must be a multiple of B.
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

// out = silu(input) = input / (1 + exp(-input)), element-wise: the activation before every
// adaLN linear of a DiT (diffusers' nn.SiLU on the conditioning vector) and inside its
// timestep / text embedders.
struct SiluArgs {
  static constexpr const char* kName = "silu";
  TensorView out;    // [T, H] written; dtype of input; rows contiguous (row stride free)
  TensorView input;  // [T, H] read; f32/f16/bf16; rows contiguous (row stride free)
};

// adaLN modulation fused with a LayerNorm without affine parameters (diffusers'
// AdaLayerNormZero / AdaLayerNormZeroSingle / AdaLayerNormContinuous and the MLP branch of
// FluxTransformerBlock):
//   n = (x - mean(x)) * rsqrt(var(x) + eps)            (biased variance, per token)
//   out[t, :] = n * (1 + scale[b, :]) + shift[b, :]    (b = t / L)
struct AdaLnModulateArgs {
  static constexpr const char* kName = "adaln_modulate";
  TensorView out;    // [T, H] written; dtype of input; rows contiguous; must not overlap input
  TensorView input;  // [T, H] read; f32/f16/bf16; rows contiguous (row stride free)
  TensorView shift;  // [B, H] read; dtype of input; rows contiguous (row stride free)
  TensorView scale;  // [B, H] read; dtype of input; rows contiguous (row stride free)
  float eps;         // added to the variance (FLUX: 1e-6)
};

// The gated residual of adaLN-Zero, IN PLACE: out[t, :] += gate[b, :] * input[t, :]
// (b = t / L), one rounding. In place because out is the block's residual stream, which
// the next norm reads; a separate sum would cost a [T, H] buffer and a copy.
struct GatedResidualAddArgs {
  static constexpr const char* kName = "gated_residual_add";
  TensorView out;    // [T, H] updated; dtype of input; rows contiguous (row stride free)
  TensorView input;  // [T, H] read; f32/f16/bf16; rows contiguous; must not overlap out
  TensorView gate;   // [B, H] read; dtype of input; rows contiguous; must not overlap out
};

// One Euler step of a flow-matching sampler, IN PLACE (diffusers'
// FlowMatchEulerDiscreteScheduler.step without stochastic sampling):
//   sample = sample + dt * model_output,   dt = sigma_next - sigma
// computed in fp32 (CUDA) or double (CPU reference) from the sample as stored, rounded once
// to the dtype, as diffusers upcasts the sample to float32 and casts the result back.
// dt is a float argument, not a tensor: rounding it to a 16-bit dtype would move every step.
struct FlowMatchEulerStepArgs {
  static constexpr const char* kName = "flow_match_euler_step";
  TensorView sample;        // [T, C] updated; f32/f16/bf16; rows contiguous (row stride free)
  TensorView model_output;  // [T, C] read; dtype of sample; rows contiguous; must not overlap sample
  float dt;                 // finite (FLUX: negative, sigma decreases)
};

// One DDIM step of a v-prediction diffusion model (Oasis's sampler), IN PLACE:
//   sample = c_sample * sample + c_output * model_output
// The step x_t -> x_t' (x0 = sqrt(a) x - sqrt(1 - a) v, eps = sqrt(1 - a) x + sqrt(a) v,
// x_t' = sqrt(a') x0 + sqrt(1 - a') eps, with a = alphas_cumprod[t], a' = alphas_cumprod[t'])
// is linear in x and v: the sampler computes the two coefficients from the schedule on the
// host in double, and the op is one fp32 fused multiply-add per element, rounded once.
struct DdimStepArgs {
  static constexpr const char* kName = "ddim_step";
  TensorView sample;        // [T, C] updated; f32/f16/bf16; rows contiguous (row stride free)
  TensorView model_output;  // [T, C] read; dtype of sample; rows contiguous; must not overlap sample
  float c_sample;           // finite
  float c_output;           // finite
};

// Swaps the two token axes of a packed token buffer, a copy (no rounding):
//   out[b, y, x, :] = input[b, x, y, :]
// An axial spatio-temporal DiT (Oasis-500m: T frames of S = 144 patch tokens) alternates
// spatial and temporal attention. Frame-major order [B, T, S, C] is what the spatial
// attention and the per-frame adaLN modulation need (each frame's S tokens consecutive, one
// modulation vector per frame); the temporal attention needs each spatial position's T
// frames as consecutive tokens, [B, S, T, C]. One op serves both directions (X = T, Y = S
// and back). Unlike the other DiT ops these tensors are rank 4 and need not follow the
// [T, H] rules above: the input's token strides are free, so a slice of a packed qkv (or
// of any wider buffer) is read in place; out is written contiguous, which keeps the kernel
// a gather of whole C-element rows.
struct TransposeTokensArgs {
  static constexpr const char* kName = "transpose_tokens";
  TensorView out;    // [B, Y, X, C] written; dtype of input; contiguous; must not overlap input
  TensorView input;  // [B, X, Y, C] read; f32/f16/bf16; C contiguous (stride 1), other strides free (>= 0)
};

// FLUX.1's single-stream block (diffusers' FluxSingleTransformerBlock), L3, over B samples
// of S joint [text; image] tokens each (T = B * S), the residual stream updated IN PLACE:
//   shift, scale, gate = linear(cond, norm_weight, norm_bias)     (per sample, [B, 3H])
//   n = adaln_modulate(hidden, shift, scale, eps)
//   q, k, v = linear(n, qkv_weight, qkv_bias);  per-head RMSNorm of q, k (norm_q, norm_k, eps)
//             and RoPE as interleaved pairs from cos_sin_cache at `positions` (qk_norm_rope, gptj)
//   a = varlen_attention(q, k, v), bidirectional within each sample
//   m = gelu_tanh(linear(n, mlp_weight, mlp_bias))
//   hidden += gate * linear([a | m], out_weight, out_bias)
// The baseline composes those registry ops (a candidate for any of them reaches it); the
// workspace tensors hold the intermediates in the weights' dtype.
struct FluxSingleBlockArgs {
  static constexpr const char* kName = "flux_single_block";
  TensorView hidden;         // [T, H] inout; f16/bf16 (f64 for the oracle); contiguous
  TensorView cond;           // [B, H] read: silu of the conditioning vector; dtype of the weights
  TensorView norm_weight;    // [3H, H] read (norm.linear)
  TensorView norm_bias;      // [3H] read
  TensorView qkv_weight;     // [3H, H] read (attn.to_q | to_k | to_v rows)
  TensorView qkv_bias;       // [3H] read
  TensorView norm_q;         // [D] read
  TensorView norm_k;         // [D] read
  TensorView mlp_weight;     // [M, H] read (proj_mlp)
  TensorView mlp_bias;       // [M] read
  TensorView out_weight;     // [H, H + M] read (proj_out)
  TensorView out_bias;       // [H] read
  TensorView positions;      // [T] read; i32: each token's row of cos_sin_cache
  TensorView cos_sin_cache;  // [P, D] read; f32: cos of the D/2 pair angles | their sin
  TensorView cu_seqlens;     // [B + 1] read; i32; 0, S, 2S, ...
  TensorView mod;            // [B, 3H] workspace
  TensorView normed;         // [T, H] workspace
  TensorView qkv;            // [T, 3H] workspace
  TensorView mlp;            // [T, M] workspace
  TensorView cat;            // [T, H + M] workspace
  TensorView out;            // [T, H] workspace
  int32_t num_heads;         // H = num_heads * D
  float eps;                 // the LayerNorm's and the RMSNorms' (FLUX: 1e-6)
};

// FLUX.1's double-stream (MMDiT) block (diffusers' FluxTransformerBlock), L3, over B
// samples of S = Lt + Li joint tokens each (T = B * S; sample b's text rows [b S, b S + Lt),
// its image rows after them), the residual stream updated IN PLACE. Each stream has its
// own weights (the image stream `img_*`, the text stream `txt_*`: norm1 / norm1_context,
// to_q|to_k|to_v / add_q_proj|add_k_proj|add_v_proj, norm_q|norm_k / norm_added_q|
// norm_added_k, to_out.0 / to_add_out, ff / ff_context):
//   shift1, scale1, gate1, shift2, scale2, gate2 = linear(cond, norm1)   (per stream, [B, 6H])
//   n = adaln_modulate(x, shift1, scale1);  q, k, v = linear(n, qkv); RMSNorm of q, k and
//   RoPE (qk_norm_rope, gptj, at `positions`)
//   a = varlen_attention over each sample's [text; image] q, k, v (joint)
//   x += gate1 * linear(a, out);  x += gate2 * ff(adaln_modulate(x, shift2, scale2)),
//   ff = linear, gelu_tanh, linear
struct FluxDoubleBlockWeights {
  TensorView norm1_weight, norm1_bias;  // [6H, H], [6H]
  TensorView qkv_weight, qkv_bias;      // [3H, H], [3H]
  TensorView norm_q, norm_k;            // [D]
  TensorView out_weight, out_bias;      // [H, H], [H]
  TensorView ff_up_weight, ff_up_bias;  // [M, H], [M]
  TensorView ff_down_weight, ff_down_bias;  // [H, M], [H]
};
struct FluxDoubleBlockArgs {
  static constexpr const char* kName = "flux_double_block";
  TensorView hidden;         // [T, H] inout; f16/bf16 (f64 for the oracle); contiguous
  TensorView cond;           // [B, H] read: silu of the conditioning vector
  FluxDoubleBlockWeights img, txt;
  TensorView positions;      // [T] read; i32
  TensorView cos_sin_cache;  // [P, D] read; f32
  TensorView cu_seqlens;     // [B + 1] read; i32; 0, S, 2S, ...
  TensorView mod, mod_txt;   // [B, 6H] workspace each
  TensorView normed;         // [T, H] workspace
  TensorView qkv;            // [T, 3H] workspace
  TensorView attn;           // [T, H] workspace
  TensorView mlp, act;       // [T, M] workspace each
  TensorView out;            // [T, H] workspace
  int32_t num_heads;
  int32_t text_len;          // Lt >= 1; Li = S - Lt >= 1
  float eps;                 // FLUX: 1e-6
};

// One half of an Oasis block's weights (spatial or temporal), torch.nn.Linear layouts.
struct OasisHalfWeights {
  TensorView mod_weight, mod_bias;  // [6H, H], [6H]: shift, scale, gate (attention) | (MLP)
  TensorView qkv_weight;            // [3H, H] (no bias)
  TensorView out_weight, out_bias;  // [H, H], [H]
  TensorView fc1_weight, fc1_bias;  // [M, H], [M]
  TensorView fc2_weight, fc2_bias;  // [H, M], [H]
};

// Oasis-500m's spatio-temporal DiT block (open-oasis's SpatioTemporalDiTBlock), L3, over B
// clips of T latent frames of S patch tokens in frame-major order (N = B T S rows, F = B T
// frames), the residual stream updated IN PLACE. Two halves, spatial then temporal, each:
//   shift1, scale1, gate1, shift2, scale2, gate2 = linear(cond, mod_weight, mod_bias)  (per frame)
//   q, k, v = linear(adaln_modulate(hidden, shift1, scale1), qkv_weight), rotated as
//             interleaved pairs (rotary_embedding, gptj) by the half's table
//   hidden += gate1 * linear(attention(q, k, v), out_weight, out_bias)
//   hidden += gate2 * linear(gelu_tanh(linear(adaln_modulate(hidden, shift2, scale2), fc1)), fc2)
// Spatial: rows at spatial_positions of spatial_cos_sin; attention bidirectional within each
// frame (spatial_cu_seqlens). Temporal: q, k, v taken to position-major order
// (transpose_tokens), rows at temporal_positions of temporal_cos_sin, attention causal over
// each position's T frames (temporal_cu_seqlens), the output back to frame-major. The
// baseline composes those registry ops (a candidate for any of them reaches it); the
// workspaces hold the intermediates in the weights' dtype.
struct OasisBlockArgs {
  static constexpr const char* kName = "oasis_block";
  TensorView hidden;               // [N, H] inout; f16/bf16 (f64 for the oracle); contiguous
  TensorView cond;                 // [F, H] read: silu of each frame's conditioning; dtype of the weights
  OasisHalfWeights spatial, temporal;
  TensorView spatial_positions;    // [N] read; i32: each token's position in its frame
  TensorView temporal_positions;   // [N] read; i32: in position-major order, each token's frame
  TensorView spatial_cos_sin;      // [S, D] read; f32
  TensorView temporal_cos_sin;     // [P >= T, D] read; f32
  TensorView spatial_cu_seqlens;   // [F + 1] read; i32: 0, S, 2S, ...
  TensorView temporal_cu_seqlens;  // [B S + 1] read; i32: 0, T, 2T, ...
  TensorView mod;                  // [F, 6H] workspace
  TensorView normed;               // [N, H] workspace
  TensorView qkv, qkv_t;           // [N, 3H] workspace each (frame-major, position-major)
  TensorView attn, attn_t;         // [N, H] workspace each
  TensorView mlp, act;             // [N, M] workspace each
  TensorView out;                  // [N, H] workspace
  int32_t num_heads;
  int32_t frames;                  // T >= 1, dividing F
  float eps;                       // Oasis: 1e-6
};

}  // namespace fk::ops
