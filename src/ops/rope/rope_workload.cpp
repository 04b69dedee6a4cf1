#include "ops/rope/rope_workload.h"

#include "fk/element.h"

namespace fk::ops {

RopeStyle rope_style_from_name(const std::string& name) {
  if (name == "neox") return RopeStyle::neox;
  if (name == "gptj") return RopeStyle::gptj;
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "unknown rope style '", name, "' (known: neox, gptj)");
}

RopeWorkload parse_rope_workload(const Json& w) {
  RopeWorkload r;
  r.tokens = wl_int(w, "tokens");
  r.q_heads = wl_int(w, "q_heads");
  r.kv_heads = wl_int(w, "kv_heads");
  r.head_size = wl_int(w, "head_size");
  r.rot_dim = wl_int(w, "rot_dim", r.head_size);
  r.max_pos = wl_int(w, "max_pos", 4096);
  r.style = rope_style_from_name(wl_string(w, "style", "neox"));
  r.dtype = wl_dtype(w, "dtype", DType::bf16);
  r.cache_dtype = wl_dtype(w, "cache_dtype", DType::f32);
  r.pos_dtype = wl_dtype(w, "pos_dtype", DType::i64);
  r.positions = wl_string(w, "positions", "random");
  const std::string layout = wl_string(w, "layout", "2d");
  FK_CHECK(r.tokens >= 0 && r.q_heads >= 1 && r.kv_heads >= 0 && r.head_size >= 1,
           "rope workload needs tokens >= 0, q_heads >= 1, kv_heads >= 0, head_size >= 1, got ", w.dump());
  FK_CHECK(r.max_pos >= 1, "rope workload needs max_pos >= 1, got ", w.dump());
  FK_CHECK(r.positions == "random" || r.positions == "arange", "rope workload field 'positions' must be random or arange, got ",
           w.dump());
  FK_CHECK(layout == "2d" || layout == "3d", "rope workload field 'layout' must be 2d or 3d, got ", w.dump());
  FK_CHECK(r.pos_dtype == DType::i64 || r.pos_dtype == DType::i32, "rope workload: pos_dtype must be i64 or i32, got ",
           w.dump());
  r.heads_3d = layout == "3d";
  return r;
}

Tensor rope_positions(const RopeWorkload& w, uint64_t seed, uint64_t stream_id) {
  if (w.positions == "arange") {
    Tensor p = Tensor::empty({w.tokens}, w.pos_dtype);
    for (int64_t t = 0; t < w.tokens; ++t) store_element(p.view().element_ptr(t), w.pos_dtype, double(t % w.max_pos));
    return p;
  }
  Tensor p = random_int_tensor({w.tokens}, w.pos_dtype, seed, stream_id, 0, w.max_pos);
  if (w.tokens > 0) store_element(p.view().element_ptr(w.tokens - 1), w.pos_dtype, double(w.max_pos - 1));
  return p;
}

Tensor rope_heads_tensor(const RopeWorkload& w, int64_t heads, uint64_t seed, uint64_t stream_id) {
  const Shape shape = w.heads_3d ? Shape{w.tokens, heads, w.head_size} : Shape{w.tokens, heads * w.head_size};
  return random_tensor(shape, w.dtype, seed, stream_id, -2.f, 2.f);
}

Tensor rope_random_cache(const RopeWorkload& w, uint64_t seed, uint64_t stream_id) {
  return random_tensor({w.max_pos, w.rot_dim}, w.cache_dtype, seed, stream_id, -1.f, 1.f);
}

RopeConfig parse_rope_config(const Json& w) {
  RopeConfig c;
  c.theta = wl_float(w, "theta", c.theta);
  c.scaling = rope_scaling_from_name(wl_string(w, "scaling", "none"));
  c.factor = wl_float(w, "factor", c.factor);
  c.low_freq_factor = wl_float(w, "low_freq_factor", c.low_freq_factor);
  c.high_freq_factor = wl_float(w, "high_freq_factor", c.high_freq_factor);
  c.original_max_position_embeddings =
      wl_float(w, "original_max_position_embeddings", c.original_max_position_embeddings);
  c.beta_fast = wl_float(w, "beta_fast", c.beta_fast);
  c.beta_slow = wl_float(w, "beta_slow", c.beta_slow);
  c.attention_factor = wl_float(w, "attention_factor", c.attention_factor);
  c.mscale = wl_float(w, "mscale", c.mscale);
  c.mscale_all_dim = wl_float(w, "mscale_all_dim", c.mscale_all_dim);
  c.yarn_truncate = wl_bool(w, "truncate", true) ? 1 : 0;
  return c;
}

}  // namespace fk::ops
