#include "ops/rope/rope_call_workload.h"

#include <string>

namespace fk::ops {

Json rope_call_workload(const TensorView& positions, const TensorView& query, const TensorView& key,
                        const TensorView& cos_sin_cache, int64_t head_size, RopeStyle style) {
  const auto heads = [&](const TensorView& v) { return v.rank == 3 ? v.shape[1] : v.shape[1] / head_size; };
  Json w = {{"tokens", query.shape[0]},
            {"q_heads", heads(query)},
            {"kv_heads", heads(key)},
            {"head_size", head_size},
            {"max_pos", cos_sin_cache.shape[0]},
            {"dtype", std::string(dtype_name(query.dtype))}};
  // Fields at their defaults are left out, as a hand-written workload would.
  if (cos_sin_cache.shape[1] != head_size) w["rot_dim"] = cos_sin_cache.shape[1];
  if (style == RopeStyle::gptj) w["style"] = "gptj";
  if (query.rank == 3) w["layout"] = "3d";
  if (cos_sin_cache.dtype != DType::f32) w["cache_dtype"] = std::string(dtype_name(cos_sin_cache.dtype));
  if (positions.dtype != DType::i64) w["pos_dtype"] = std::string(dtype_name(positions.dtype));
  return w;
}

}  // namespace fk::ops
