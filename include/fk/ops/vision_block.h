// Vision-tower blocks as single registry ops (L3).
#pragma once
#include "fk/op.h"
#include "fk/ops/activation.h"

namespace fk::ops {

// One block of Qwen3-VL's vision tower (transformers' Qwen3VLVisionBlock), L3, over the
// patches of B frames packed together (T patches in all; each frame attends within itself),
// the residual stream updated IN PLACE:
//   normed = layer_norm(hidden, norm1, norm1_bias, eps)
//   qkv    = linear(normed, qkv_weight, qkv_bias)                      [T, 3H]: q | k | v
//   q, k  rotated in place by rotary_embedding (neox halves, head_size D) at `positions`
//          rows of cos_sin_cache (Qwen3-VL: each patch its own row of 2-D angles)
//   attn_out = varlen_attention(q, k, v) within each frame (cu_seqlens), scale 1/sqrt(D)
//   sub    = linear(attn_out, proj_weight, proj_bias);   hidden = add(hidden, sub)
//   normed = layer_norm(hidden, norm2, norm2_bias, eps)
//   inter  = linear(normed, fc1_weight, fc1_bias);  act = gelu(inter, gelu)
//   sub    = linear(act, fc2_weight, fc2_bias);     hidden = add(hidden, sub)
// i.e. the ops the tower ran for a block, in that order. The baseline composes those registry
// ops (a candidate for any of them reaches it); the intermediates live in the workspace
// tensors, in the model dtype. The oracle keeps the intermediates in f64 but rounds what the
// baseline's parts read in the dtype where that matters: q, k, v (attention reads them in
// the dtype, rotated) and the residual sum between the two halves.
//
// Dtypes: hidden, the weights and the workspaces f16 or bf16 (one model dtype; the CPU
// reference, which is also the oracle, takes f64 for hidden); positions and cu_seqlens i32
// on the device, cu_seqlens_host the host mirror; cos_sin_cache f32. Every tensor packed.
struct Qwen3VLVisionBlockArgs {
  static constexpr const char* kName = "qwen3_vl_vision_block";
  TensorView hidden;           // [T, H] inout: the block's input in, its output out
  TensorView norm1;            // [H] read
  TensorView norm1_bias;       // [H] read
  TensorView qkv_weight;       // [3 H, H] read (query, key, value rows stacked)
  TensorView qkv_bias;         // [3 H] read
  TensorView proj_weight;      // [H, H] read
  TensorView proj_bias;        // [H] read
  TensorView norm2;            // [H] read
  TensorView norm2_bias;       // [H] read
  TensorView fc1_weight;       // [I, H] read
  TensorView fc1_bias;         // [I] read
  TensorView fc2_weight;       // [H, I] read
  TensorView fc2_bias;         // [H] read
  TensorView positions;        // [T] read; i32: each patch's row of cos_sin_cache
  TensorView cos_sin_cache;    // [P, D] read; f32: cos of the D/2 angles | their sin
  TensorView cu_seqlens;       // [B + 1] read; i32; on the backend's device
  TensorView cu_seqlens_host;  // [B + 1] read; i32; host mirror
  TensorView normed;           // [T, H] workspace
  TensorView qkv;              // [T, 3 H] workspace
  TensorView attn_out;         // [T, H] workspace
  TensorView sub;              // [T, H] workspace
  TensorView inter;            // [T, I] workspace
  TensorView act;              // [T, I] workspace
  int32_t num_heads;           // H = num_heads * D, D even
  int32_t max_seqlen;          // >= every frame's patch count
  float eps;                   // the LayerNorms' (Qwen3-VL: 1e-6)
  GeluApprox gelu;             // the MLP's GELU (Qwen3-VL: tanh)
};

}  // namespace fk::ops
