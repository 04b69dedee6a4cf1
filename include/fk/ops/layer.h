// Whole layers (L3 ops). Shapes beside each field: T tokens (packed), H hidden size, Hq
// query heads, Hk KV heads, D head dim, I the MLP's intermediate size, B sequences, P cache
// pages of S slots.
#pragma once
#include <cstdint>

#include "fk/op.h"
#include "fk/ops/activation.h"
#include "fk/ops/rope.h"

namespace fk::ops {

// One pre-norm decoder layer of the Llama / Mistral / Qwen2 / Qwen3 form, on the residual
// stream as vLLM's layers carry it (the sub-layer output beside the residual, added by the
// next norm):
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
//   hidden   = (silu(g) * u) @ down_weight^T, with [g | u] = x @ gate_up_weight^T
//
// i.e. exactly the ops a decoder runs for the layer, in that order, each intermediate held
// in the model dtype (the workspace tensors below): rms_norm_linear (without the add on the
// first layer), rope_and_cache (fk/ops/rope.h), batch_decode_paged_attention or
// batch_prefill_paged_attention (fk/ops/attention.h), linear, rms_norm_linear,
// silu_and_mul (fk/ops/activation.h), linear. The layer's outputs are `hidden` and
// `residual` (the next layer's inputs) and the cache rows of this step's tokens. The
// oracle rounds only the residual stream and q, k, v (the cache and the attention hold
// them in the dtype) and keeps the other intermediates in f64, so a fused implementation
// may keep those in fp32.
//
// Why in place: the engine carries the stream in two [T, H] buffers, and a layer ends with
// its output beside the updated residual, so a whole model calls this op layer after layer
// on the same two buffers with no copy. The first layer has no residual yet (vLLM's
// residual = None): with first_layer = 1 its input is `hidden` alone (the embedding) and
// `residual`'s contents are not read.
//
// Attention: a batch with as many query tokens as sequences (T == B) is a decode batch
// (every sequence one token: the decode kernel serves it); any other batch (prefill,
// chunked prefill, mixed) goes through the prefill kernel. Plan / run as the attention ops:
// the op's plan step runs the attention op's plan with this layer's metadata into the
// attention workspaces (CUDA; the CPU has none), and one plan serves every layer of a step
// (only the weights and caches differ). The metadata follows fk/ops/attention.h: the
// qo_len[b] query tokens of sequence b are the last qo_len[b] tokens of its KV, which this
// call writes into the cache through slot_mapping before the attention reads it.
//
// Dtypes: hidden, residual, the weights, the caches and the workspace activations bf16 or
// f16 (one model dtype; the CPU reference, which is also the oracle, takes f64 for hidden,
// residual and the caches); cos_sin_cache f32 (or the model dtype); positions i64 or i32;
// slot_mapping i64; metadata i32. Every matrix has a contiguous last dimension; weights,
// caches and activations are packed (contiguous). No two written tensors may overlap, nor a
// written tensor any input.
//
// Read: the weights, positions, cos_sin_cache, slot_mapping, the metadata and its host
// mirrors. Updated in place: hidden, residual, k_cache and v_cache (only the rows of this
// step's slots; every other cache row is left as it was). Scratch: the workspace tensors,
// undefined before and after the call (the attention workspaces hold the plan between
// plan and run).
struct DecoderLayerArgs {
  static constexpr const char* kName = "decoder_layer";
  // The residual stream.
  TensorView hidden;    // [T, H] inout: the previous layer's output (the embedding when first_layer) in; this layer's MLP output out
  TensorView residual;  // [T, H] inout: the stream before the layer in (not read when first_layer); s + o out

  // The layer's weights (HF / vLLM layout: [out_features, in_features]).
  TensorView input_norm;           // [H] read
  TensorView qkv_weight;           // [(Hq + 2 Hk) D, H] read: q, k, v projections stacked
  TensorView qkv_bias;             // [(Hq + 2 Hk) D] read; optional (Qwen2; absent: no data or no elements)
  TensorView q_norm;               // [D] read; optional (Qwen3's per-head norm of q)
  TensorView k_norm;               // [D] read; present exactly when q_norm is
  TensorView o_weight;             // [H, Hq D] read
  TensorView post_attention_norm;  // [H] read
  TensorView gate_up_weight;       // [2 I, H] read: gate rows, then up rows
  TensorView down_weight;          // [H, I] read

  // Rope (fk/ops/rope.h; rot_dim = cos_sin_cache's columns, <= D).
  TensorView positions;      // [T] read; i64 or i32; each in [0, max_pos)
  TensorView cos_sin_cache;  // [max_pos, rot_dim] read

  // This layer's paged KV cache (fk/ops/kv_cache.h layout) and the step's metadata
  // (fk/ops/attention.h), with the host mirrors the plan reads.
  TensorView k_cache;                // [P, S, Hk, D] inout: this step's slots written
  TensorView v_cache;                // [P, S, Hk, D] inout
  TensorView slot_mapping;           // [T] read; i64; page * S + offset, or < 0 to skip a token's K/V write
  TensorView qo_indptr;              // [B+1] read (device)
  TensorView kv_indptr;              // [B+1] read (device)
  TensorView kv_indices;             // [nnz_pages] read (device)
  TensorView kv_last_page_len;       // [B] read (device)
  TensorView qo_indptr_host;         // [B+1] read; on the CPU: copy of qo_indptr
  TensorView kv_indptr_host;         // [B+1] read; on the CPU: copy of kv_indptr
  TensorView kv_last_page_len_host;  // [B] read; on the CPU: copy of kv_last_page_len

  // Workspace: the activations between the parts, in the model dtype, and the attention
  // op's workspaces (sized by paged_attention_workspace_bytes for this batch).
  TensorView normed;              // [T, H]
  TensorView residual_mid;        // [T, H]: the stream after the input add (the parts write it out of place), or the first layer's o
  TensorView qkv;                 // [T, (Hq + 2 Hk) D]
  TensorView attn_out;            // [T, Hq D]
  TensorView gate_up;             // [T, 2 I]
  TensorView act;                 // [T, I]
  TensorView float_workspace;     // [bytes] u8 (device)
  TensorView int_workspace;       // [bytes] u8 (device)
  TensorView host_int_workspace;  // [bytes] u8 on the CPU
  TensorView plan_info;           // [kAttentionPlanInfoLen] i64 on the CPU

  int32_t num_heads;     // Hq
  int32_t num_kv_heads;  // Hk; divides Hq
  int32_t head_dim;      // D
  RopeStyle rope_style;
  float eps;             // every RMSNorm of the layer (q/k norms included)
  float sm_scale;        // attention logit scale (models: 1 / sqrt(D))
  int32_t window_left;   // -1 = none; >= 0: sliding window (fk/ops/attention.h)
  int32_t first_layer;   // 1: the stream is `hidden` alone (no add before the input norm; residual not read)
  int32_t cuda_graph;    // the attention op's cuda_graph attribute (decode: grid class)
};

// One post-norm encoder layer of BERT / XLM-RoBERTa (BGE-M3's 24), over a packed batch of
// sequences (bidirectional attention within each):
//
//   qkv    = hidden @ qkv_weight^T + qkv_bias                  [q | k | v] per token
//   a      = varlen_attention(q, k, v, cu_seqlens), sm_scale 1/sqrt(D), not causal
//   hidden = layer_norm(round(a @ o_weight^T + o_bias + hidden)) * attn_norm + attn_norm_bias
//   hidden = layer_norm(round(gelu(hidden @ up_weight^T + up_bias) @ down_weight^T + down_bias + hidden))
//            * out_norm + out_norm_bias
//
// i.e. the ops the encoder runs for the layer, in that order: linear, varlen_attention,
// linear, add_layer_norm, linear, gelu, linear, add_layer_norm (the intermediates in the
// workspace tensors, in the model dtype). The oracle keeps the intermediates in f64 and
// rounds only the layer's state: q, k, v (attention reads them in the dtype), the residual
// sums and the hidden state between the two halves.
//
// Dtypes: hidden, the weights and the workspaces f16 or bf16 (one model dtype; the CPU
// reference, which is also the oracle, takes f64 for hidden); cu_seqlens i32 on the device
// and cu_seqlens_host its mirror. Every tensor packed. Updated in place: hidden. Scratch:
// qkv [T, 3 H], attn_out [T, H], sub [T, H], inter [T, I], act [T, I].
// seqused_k (optional): the attention's keys of sequence b are only its first seqused_k[b]
// tokens (varlen_attention's seqused_k): ColBERT's [MASK]-padded queries.
struct EncoderLayerArgs {
  static constexpr const char* kName = "encoder_layer";
  TensorView hidden;          // [T, H] inout: the layer's input in, its output out
  TensorView qkv_weight;      // [3 H, H] read (query, key, value rows stacked)
  TensorView qkv_bias;        // [3 H] read
  TensorView o_weight;        // [H, H] read
  TensorView o_bias;          // [H] read
  TensorView attn_norm;       // [H] read
  TensorView attn_norm_bias;  // [H] read
  TensorView up_weight;       // [I, H] read
  TensorView up_bias;         // [I] read
  TensorView down_weight;     // [H, I] read
  TensorView down_bias;       // [H] read
  TensorView out_norm;        // [H] read
  TensorView out_norm_bias;   // [H] read
  TensorView cu_seqlens;      // [B + 1] read; i32; on the backend's device
  TensorView cu_seqlens_host; // [B + 1] read; i32; host mirror
  TensorView qkv;             // [T, 3 H] workspace
  TensorView attn_out;        // [T, H] workspace
  TensorView sub;             // [T, H] workspace
  TensorView inter;           // [T, I] workspace
  TensorView act;             // [T, I] workspace
  int32_t num_heads;
  int32_t max_seqlen;         // >= every sequence's length
  float eps;                  // the LayerNorms' (XLM-R: 1e-5)
  GeluApprox gelu;            // the MLP's GELU
  TensorView seqused_k;       // [B] read; i32; on the backend's device; optional (empty: every token is a key)
};

}  // namespace fk::ops
