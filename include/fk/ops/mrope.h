// Multimodal rotary position embedding (M-RoPE) of Qwen2-VL / Qwen2.5-VL / Qwen3-VL's text
// model, as vLLM's MRotaryEmbedding applies it: every token has three positions (temporal,
// height, width; a text token has the same value in all three) and each rotary frequency
// takes its angle from one of them.
//
// Shapes: T tokens (packed), Hq / Hk heads, D head_size, rot_dim the cache's width (the
// rotated leading dims of a head, neox style: pair i is (x[i], x[i + rot_dim/2])). q and k
// are updated in place; their accepted layouts and strides are rotary_embedding's
// (fk/ops/rope.h): [T, H*D] or [T, H, D], last dim contiguous.
//
// Frequency i in [0, rot_dim/2) reads axis a(i) of the positions, with sections
// (s0, s1, s2), s0 + s1 + s2 = rot_dim/2:
//   chunked (Qwen2-VL, Qwen2.5-VL):  a = 0 for i < s0, 1 for i < s0 + s1, else 2
//   interleaved (Qwen3-VL):          a = 1 if i % 3 == 1 and i < 3*s1,
//                                    a = 2 if i % 3 == 2 and i < 3*s2, else 0
// (transformers' apply_interleaved_mrope: frequencies cycle T, H, W, ..., the tail T).
// Then with p = positions[a, t], c = cos_sin_cache[p, i], s = cos_sin_cache[p, rot_dim/2 + i]:
//   x1' = x1 * c - x2 * s,  x2' = x2 * c + x1 * s
// Math in fp32 on CUDA (double in the CPU reference), rounded once to the dtype.
//
// Positions must lie in [0, max_pos): the CPU implementation reports one outside as an
// error; the CUDA baseline cannot without a host sync and leaves such a token unchanged.
#pragma once
#include "fk/op.h"

namespace fk::ops {

struct MropeRotaryEmbeddingArgs {
  static constexpr const char* kName = "mrope_rotary_embedding";
  TensorView positions;      // [3, T]                   read; i64 or i32; any strides
  TensorView query;          // [T, Hq*D] or [T, Hq, D]  inout; f32/f16/bf16
  TensorView key;            // [T, Hk*D] or [T, Hk, D]  inout; dtype of query; Hk >= 0
  TensorView cos_sin_cache;  // [max_pos, rot_dim]       read; f32 (preferred) or dtype of query; contiguous
  int32_t head_size;         // D
  int32_t mrope_section[3];  // frequencies per axis (t, h, w); sum rot_dim/2 (Qwen3-VL: 24, 20, 20)
  int32_t interleaved;       // 1: Qwen3-VL's interleaved layout; 0: chunked sections
};

}  // namespace fk::ops
