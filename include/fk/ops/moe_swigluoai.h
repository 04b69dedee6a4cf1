// The routed experts of gpt-oss: fused_experts (fk/ops/moe.h) with a bias on every expert
// projection and gpt-oss's clamped SwiGLU ("swigluoai" in vLLM's fused_moe), as
// transformers' GptOssExperts computes them. Shapes as in fk/ops/moe.h: T tokens, k experts
// per token, E experts, H hidden size, I expert intermediate size.
//
//   out[t, :] = sum_{j < k} topk_weights[t, j] * expert_{topk_ids[t, j]}(hidden[t, :])
//   expert_e(x) = w2[e] @ act + w2_bias[e]
//   g = w13[e, :I] @ x + w13_bias[e, :I],  u = w13[e, I:] @ x + w13_bias[e, I:]
//   g = min(g, limit),  u = clamp(u, -limit, limit)
//   act = (u + 1) * g * sigmoid(alpha * g)
//
// w13 holds the gate projection in its first I rows and the up projection in the last I,
// as fused_experts reads them. gpt-oss checkpoints store gate_up_proj as [E, H, 2I] with
// gate and up in alternating columns (gate_up[..., ::2], gate_up[..., 1::2]) and
// down_proj as [E, I, H]: the loader transposes and de-interleaves them once.
//
// Expert ids outside [0, E) route the slot nowhere (adds nothing). Products accumulate in
// fp32 (CUDA) or double (CPU reference); the CUDA baseline keeps act in f32 and rounds
// out once.
//
// workspace: at least fused_experts_swigluoai_workspace_bytes(T, k, I) bytes of scratch
// (device memory on the CUDA backend; the CPU reference needs none). The CUDA baseline
// launches kernels only (no allocation, copy or sync): it can be captured in a CUDA graph.
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

inline constexpr float kSwigluOaiAlpha = 1.702f;
inline constexpr float kSwigluOaiLimit = 7.0f;

// The f32 activations of every slot: T * k * I floats, 256-byte aligned.
inline int64_t fused_experts_swigluoai_workspace_bytes(int64_t tokens, int64_t top_k, int64_t intermediate) {
  return (tokens * top_k * intermediate * 4 + 255) / 256 * 256 + 256;
}

struct FusedExpertsSwigluOaiArgs {
  static constexpr const char* kName = "fused_experts_swigluoai";
  TensorView out;           // [T, H] written; dtype of hidden; contiguous
  TensorView hidden;        // [T, H] read; bf16/f16; rows contiguous (row stride free)
  TensorView w13;           // [E, 2I, H] read; dtype of hidden; contiguous (gate rows, then up rows)
  TensorView w13_bias;      // [E, 2I] read; dtype of hidden; contiguous
  TensorView w2;            // [E, H, I] read; dtype of hidden; contiguous
  TensorView w2_bias;       // [E, H] read; dtype of hidden; contiguous
  TensorView topk_weights;  // [T, k] read; f32; contiguous
  TensorView topk_ids;      // [T, k] read; i32; contiguous
  TensorView workspace;     // [bytes] u8: scratch
  float alpha;              // gpt-oss: 1.702
  float limit;              // gpt-oss: 7.0 (> 0)
};

}  // namespace fk::ops
