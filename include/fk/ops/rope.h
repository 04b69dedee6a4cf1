// Rotary position embedding ops (vLLM conventions). Shapes beside each field: T tokens
// (packed), Hq query heads, Hk key heads (GQA: Hk may differ from Hq), D head_size,
// rot_dim the rotated leading part of each head (rot_dim <= D, even; the dims
// [rot_dim, D) are left as they are: partial rotary), max_pos the cache's rows.
//
// q and k are updated in place. Their rows may be strided: after the QKV GEMM an engine
// passes q = qkv[:, 0:Hq*D] and k = qkv[:, Hq*D:(Hq+Hk)*D] of a fused [T, (Hq+2Hk)*D]
// buffer, i.e. views with token stride (Hq+2Hk)*D. Layouts accepted for q and k:
//   [T, H*D]   last dim contiguous, token stride free (heads packed within a row)
//   [T, H, D]  last dim contiguous, token and head strides free
// Strides must be non-negative, and views must not overlap themselves (checked) or each
// other (not checked).
//
// For pair i in [0, rot_dim/2) at position p = positions[t], with
//   c = cos_sin_cache[p, i], s = cos_sin_cache[p, rot_dim/2 + i]
// and (x1, x2) the pair's two elements of a head:
//   neox (rotate halves):     x1 = x[i],      x2 = x[i + rot_dim/2]
//   gptj (interleaved pairs): x1 = x[2i],     x2 = x[2i + 1]
//   x1' = x1 * c - x2 * s,  x2' = x2 * c + x1 * s
// Math is fp32 on CUDA (double in the CPU reference), one rounding to the dtype at the end.
//
// positions must lie in [0, max_pos). The CPU implementation reports an out-of-range
// position as an error; the CUDA baseline cannot check without a host sync, so it leaves
// such a token's q and k unchanged (it never reads outside the cache).
//
// Programmatic dependent launch: the CUDA baselines of the rope ops read positions, the
// cos/sin cache, the norm weights (and rope_and_cache's slot_mapping) before they wait for
// the kernel launched right before them, to take dependent loads off a decode layer's
// critical path; q, k, v and everything they write wait. So positions and slot_mapping must not be
// written by the kernel launched immediately before the op (a copy, or any kernel before
// that one, is fine: an engine's step inputs are). The ops' variant `late_reads` reads
// them after the wait.
//
// The cache: see fk/rope_cache.h (make_rope_cos_sin_cache). An f32 cache is recommended
// whatever the q/k dtype; a cache in the q/k dtype is accepted too.
#pragma once
#include "fk/op.h"
#include "fk/rope_cache.h"

namespace fk::ops {

enum class RopeStyle : int32_t {
  neox = 0,  // rotate halves (Llama, Qwen, Mistral; vLLM is_neox_style=True)
  gptj = 1,  // interleaved pairs (GPT-J, some GLM / DeepSeek paths; is_neox_style=False)
};
inline const char* rope_style_name(RopeStyle s) { return s == RopeStyle::gptj ? "gptj" : "neox"; }

// rope applied in place to q and k.
struct RotaryEmbeddingArgs {
  static constexpr const char* kName = "rotary_embedding";
  TensorView positions;      // [T]                      read; i64 or i32 (any stride)
  TensorView query;          // [T, Hq*D] or [T, Hq, D]  inout; f32/f16/bf16
  TensorView key;            // [T, Hk*D] or [T, Hk, D]  inout; dtype of query; Hk >= 0
  TensorView cos_sin_cache;  // [max_pos, rot_dim]       read; f32 (preferred) or dtype of query; contiguous
  int32_t head_size;         // D
  RopeStyle style;
};

// Qwen3 attention prologue, fused: per-head RMSNorm of q and k, then rope, in place:
//   x = x * rsqrt(mean(x[0:D]^2) + eps) * weight    (over the whole head, tail included)
//   then the rotation above on the normalised values.
// The reference does not round between the norm and the rope (the CUDA baseline keeps the
// normalised values in fp32 registers too); HF's unfused path rounds the normalised head
// to the dtype first, a difference far inside the dtype tolerance.
struct QkNormRopeArgs {
  static constexpr const char* kName = "qk_norm_rope";
  TensorView positions;      // [T]                      read; i64 or i32 (any stride)
  TensorView query;          // [T, Hq*D] or [T, Hq, D]  inout; f32/f16/bf16
  TensorView key;            // [T, Hk*D] or [T, Hk, D]  inout; dtype of query; Hk >= 0
  TensorView q_weight;       // [D]                      read; dtype of query; contiguous
  TensorView k_weight;       // [D]                      read; dtype of query; contiguous
  TensorView cos_sin_cache;  // [max_pos, rot_dim]       read; f32 (preferred) or dtype of query; contiguous
  int32_t head_size;         // D
  RopeStyle style;
  float eps;                 // added to the mean of squares (Qwen3: 1e-6)
};

// The attention prologue of a decoder layer in one op: rotary_embedding (qk_norm_rope when
// q_weight and k_weight are given), then reshape_and_cache (fk/ops/kv_cache.h) of the
// rotated key and the value, with no kernel boundary between the rotation and the cache
// write. Its result is that of the two ops called in that order:
//   query, key  rotated in place (after the per-head RMSNorm with weights)
//   k_cache[slot / S, slot % S] = key[t] (rotated), v_cache[...] = value[t]
//                               for slot = slot_mapping[t] >= 0; other cache rows untouched
// 16-bit only, the caches of the query's dtype (an fp8 cache takes the two ops). Invalid
// input as for the two ops: the CPU reference reports a position outside the cos/sin
// cache, a slot outside the KV cache or a slot used twice before it writes anything; the
// CUDA baseline cannot report without a host sync, so it leaves a token with a bad
// position untouched (q, k and its cache rows) and drops writes to out-of-range slots.
struct RopeAndCacheArgs {
  static constexpr const char* kName = "rope_and_cache";
  TensorView positions;      // [T]                      read; i64 or i32 (any stride)
  TensorView query;          // [T, Hq*D] or [T, Hq, D]  inout; f16/bf16
  TensorView key;            // [T, Hk, D]               inout; dtype of query; Hk >= 1
  TensorView value;          // [T, Hk, D]               read; dtype of query
  TensorView q_weight;       // [D]                      read; dtype of query; or absent (no data or no elements)
  TensorView k_weight;       // [D]                      read; present exactly when q_weight is
  TensorView cos_sin_cache;  // [max_pos, rot_dim]       read; f32 (preferred) or dtype of query; contiguous
  TensorView k_cache;        // [P, S, Hk, D]            inout; dtype of query; each page contiguous
  TensorView v_cache;        // [P, S, Hk, D]            inout; as k_cache
  TensorView slot_mapping;   // [T]                      read; i64; page * S + offset, or < 0 to skip the token
  int32_t head_size;         // D
  RopeStyle style;
  float eps;                 // with the weights: added to the mean of squares
};

// Builds the cos/sin cache of fk/rope_cache.h (model load time, not a hot path).
struct RopeCosSinCacheArgs {
  static constexpr const char* kName = "rope_cos_sin_cache";
  TensorView cos_sin_cache;  // [max_pos, rot_dim] written; f32 (preferred) / f16 / bf16; contiguous
  RopeConfig config;
};

}  // namespace fk::ops
