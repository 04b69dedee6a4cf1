// A mixture-of-experts decoder layer as one op (L3): Mixtral, Qwen3-MoE, OLMoE. Shapes
// beside each field: T tokens (packed), H hidden size, Hq query heads, Hk KV heads, D head
// dim, E experts, k experts per token, I expert intermediate size, B sequences, P cache
// pages of S slots.
#pragma once
#include <cstdint>

#include "fk/op.h"
#include "fk/ops/rope.h"

namespace fk::ops {

// One pre-norm MoE decoder layer (transformers' MixtralDecoderLayer, Qwen3MoeDecoderLayer,
// OlmoeDecoderLayer) on the residual stream as decoder_layer (fk/ops/layer.h) carries it:
//
//   s        = first_layer ? hidden : round(hidden + residual)            (residual stream)
//   x        = rms_norm(s) * input_norm
//   qkv      = x @ qkv_weight^T (+ qkv_bias)                              [q | k | v] per token
//   q, k     = rope(per-head rms_norm(q) * q_norm, ...)  (the norm with q_norm / k_norm only)
//   k_cache, v_cache [slot_mapping[t]] = k[t], v[t]                       (slots < 0 skipped)
//   a        = paged attention of q over the cache (causal, GQA, window_left, sm_scale)
//   o        = a @ o_weight^T
//   residual = round(o + s)
//   x        = rms_norm(residual) * post_attention_norm
//   logits   = x @ router_weight^T                                        [T, E]
//   p        = softmax(logits); ids = the k largest p of each token
//   w        = those p, divided by their sum when renormalize (Mixtral, Qwen3-MoE; OLMoE: not)
//   hidden   = sum_j w_j (silu(g_j) * u_j) @ w2[ids_j]^T, with [g_j | u_j] = x @ w13[ids_j]^T
//
// i.e. exactly the ops the engine runs for the layer, in that order: rms_norm_linear
// (without the add on the first layer), rope_and_cache, batch_decode_paged_attention or
// batch_prefill_paged_attention, linear, rms_norm_linear (the router), fused_moe (the
// routing, moe_topk_softmax, and the experts, fused_experts). Intermediates are held in
// the model dtype (the workspace tensors), the routing weights in f32.
//
// The oracle rounds the residual stream and q, k, v (the cache holds k and v in the dtype)
// and keeps every other intermediate in f64. Its routing is the top-k of f64 logits, so a
// token whose k-th and (k+1)-th logits are closer than an implementation's roundings may be
// routed either way: the op's output check accepts a token's hidden row when it matches the
// experts on any selection such near-ties allow, computed from the implementation's own
// residual (as gpt_oss_layer's).
//
// Plan / run, metadata, in-place updates and the first layer as decoder_layer's: hidden
// and residual in place, the cache rows of this step's slots written, the workspaces
// undefined before and after the call (the attention workspaces hold the plan).
//
// Dtypes: hidden, residual, the weights, the caches and the workspace activations bf16 or
// f16 (one model dtype; the CPU reference, which is also the oracle, takes f64 for hidden,
// residual and the caches); topk_weights f32; topk_ids i32; cos_sin_cache f32 (or the model
// dtype); positions i64 or i32; slot_mapping i64; metadata i32. Every tensor packed. No two
// written tensors may overlap, nor a written tensor any input.
struct MoeLayerArgs {
  static constexpr const char* kName = "moe_layer";
  // The residual stream.
  TensorView hidden;    // [T, H] inout: the previous layer's output (the embedding when first_layer) in; the experts' output out
  TensorView residual;  // [T, H] inout: the stream before the layer in (not read when first_layer); s + o out

  // The layer's weights (HF / vLLM layout; the experts as fk/ops/moe.h's fused_experts reads them).
  TensorView input_norm;           // [H] read
  TensorView qkv_weight;           // [(Hq + 2 Hk) D, H] read
  TensorView qkv_bias;             // [(Hq + 2 Hk) D] read; optional (absent: no data or no elements)
  TensorView q_norm;               // [D] read; optional (Qwen3-MoE's per-head norm of q)
  TensorView k_norm;               // [D] read; present exactly when q_norm is
  TensorView o_weight;             // [H, Hq D] read
  TensorView post_attention_norm;  // [H] read
  TensorView router_weight;        // [E, H] read
  TensorView w13;                  // [E, 2I, H] read: gate rows, then up rows
  TensorView w2;                   // [E, H, I] read

  // Rope and the paged cache, as DecoderLayerArgs.
  TensorView positions;              // [T] read; i64 or i32
  TensorView cos_sin_cache;          // [max_pos, rot_dim] read
  TensorView k_cache;                // [P, S, Hk, D] inout
  TensorView v_cache;                // [P, S, Hk, D] inout
  TensorView slot_mapping;           // [T] read; i64
  TensorView qo_indptr;              // [B+1] read (device)
  TensorView kv_indptr;              // [B+1] read (device)
  TensorView kv_indices;             // [nnz_pages] read (device)
  TensorView kv_last_page_len;       // [B] read (device)
  TensorView qo_indptr_host;         // [B+1] read
  TensorView kv_indptr_host;         // [B+1] read
  TensorView kv_last_page_len_host;  // [B] read

  // Workspace.
  TensorView normed;              // [T, H]
  TensorView residual_mid;        // [T, H]: the stream after the input add, or the first layer's o
  TensorView qkv;                 // [T, (Hq + 2 Hk) D]
  TensorView attn_out;            // [T, Hq D]
  TensorView router_logits;       // [T, E]
  TensorView topk_weights;        // [T, k] f32
  TensorView topk_ids;            // [T, k] i32: k is its column count
  TensorView moe_workspace;       // [fused_experts_workspace_bytes(T, k, E, H, I)] u8 (device)
  TensorView float_workspace;     // [bytes] u8 (device)
  TensorView int_workspace;       // [bytes] u8 (device)
  TensorView host_int_workspace;  // [bytes] u8 on the CPU
  TensorView plan_info;           // [kAttentionPlanInfoLen] i64 on the CPU

  int32_t num_heads;     // Hq
  int32_t num_kv_heads;  // Hk; divides Hq
  int32_t head_dim;      // D
  RopeStyle rope_style;
  float eps;             // every RMSNorm of the layer (q/k norms included)
  float sm_scale;        // attention logit scale (1 / sqrt(D))
  int32_t window_left;   // -1: full attention; >= 0: sliding window (Mixtral's 4096 where configured)
  int32_t first_layer;   // 1: the stream is `hidden` alone
  int32_t cuda_graph;    // the attention op's cuda_graph attribute
  int32_t renormalize;   // 1: the top-k weights divided by their sum; 0: the softmax probabilities
};

}  // namespace fk::ops
