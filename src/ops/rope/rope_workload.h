// Workload fields of the rope ops and the host tensors their make_case builds.
//
// rotary_embedding / qk_norm_rope workload fields (defaults in brackets):
//   tokens, q_heads, kv_heads, head_size   required
//   rot_dim [head_size]     rotated leading dims of a head (partial rotary when < head_size)
//   style ["neox"]          "neox" or "gptj"
//   dtype ["bf16"]          q / k (and qk_norm_rope weights)
//   cache_dtype ["f32"]     cos_sin_cache
//   pos_dtype ["i64"]       positions: "i64" or "i32"
//   max_pos [4096]          cache rows
//   positions ["random"]    "random": uniform in [0, max_pos), the last token at max_pos - 1
//                           so the cache's last row is always read; "arange": t % max_pos
//                           (a prefill)
//   layout ["2d"]           "2d": q [T, Hq*D]; "3d": q [T, Hq, D]
//   eps [1e-6]              qk_norm_rope only
// The cache holds uniform values in [-1, 1), not real cos/sin: the kernels' arithmetic does
// not depend on cos^2 + sin^2 = 1, and filling a 32k-row cache stays cheap.
//
// rope_cos_sin_cache workload fields: max_pos, rot_dim, dtype ["f32"], theta [10000],
// scaling ["none"] and the RopeConfig fields of that scaling under their own names
// (factor, low_freq_factor, high_freq_factor, original_max_position_embeddings, beta_fast,
// beta_slow, attention_factor, mscale, mscale_all_dim, truncate).
#pragma once
#include <string>

#include "fk/ops/rope.h"
#include "ops/common/case_builder.h"

namespace fk::ops {

struct RopeWorkload {
  int64_t tokens = 0;
  int64_t q_heads = 0;
  int64_t kv_heads = 0;
  int64_t head_size = 0;
  int64_t rot_dim = 0;
  int64_t max_pos = 0;
  RopeStyle style = RopeStyle::neox;
  DType dtype = DType::bf16;
  DType cache_dtype = DType::f32;
  DType pos_dtype = DType::i64;
  std::string positions;  // "random" | "arange"
  bool heads_3d = false;
};

RopeWorkload parse_rope_workload(const Json& w);
RopeStyle rope_style_from_name(const std::string& name);

Tensor rope_positions(const RopeWorkload& w, uint64_t seed, uint64_t stream_id);
// Random q or k for `heads` heads in the workload's layout.
Tensor rope_heads_tensor(const RopeWorkload& w, int64_t heads, uint64_t seed, uint64_t stream_id);
Tensor rope_random_cache(const RopeWorkload& w, uint64_t seed, uint64_t stream_id);

RopeConfig parse_rope_config(const Json& w);

}  // namespace fk::ops
