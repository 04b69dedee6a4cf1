// fk/rope_cache.h: config checks, scaling names, and the cache builder entry point.
#include "fk/rope_cache.h"

#include <cmath>

#include "fk/op_registry.h"
#include "fk/ops/rope.h"

namespace fk {

namespace {
void expect_finite_positive(const char* field, double v, const RopeConfig& c) {
  FK_CHECK(std::isfinite(v) && v > 0, "rope config (", rope_scaling_name(c.scaling), "): ", field,
           " must be finite and positive, got ", v);
}
}  // namespace

const char* rope_scaling_name(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::none: return "none";
    case RopeScalingType::linear: return "linear";
    case RopeScalingType::llama3: return "llama3";
    case RopeScalingType::yarn: return "yarn";
  }
  return "invalid";
}

RopeScalingType rope_scaling_from_name(const std::string& name) {
  if (name == "none" || name == "default") return RopeScalingType::none;
  if (name == "linear") return RopeScalingType::linear;
  if (name == "llama3") return RopeScalingType::llama3;
  if (name == "yarn") return RopeScalingType::yarn;
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "unknown rope scaling '", name, "' (known: none, linear, llama3, yarn)");
}

void validate_rope_config(const RopeConfig& c, int64_t rot_dim) {
  FK_CHECK(rot_dim >= 2 && rot_dim % 2 == 0 && rot_dim <= (1 << 30), "rope config: rot_dim must be even and >= 2, got ",
           rot_dim);
  const auto type = static_cast<int32_t>(c.scaling);
  FK_CHECK(type >= 0 && type <= static_cast<int32_t>(RopeScalingType::yarn),
           "rope config: scaling must be none (0), linear (1), llama3 (2) or yarn (3), got ", type);
  expect_finite_positive("theta", c.theta, c);
  switch (c.scaling) {
    case RopeScalingType::none: break;
    case RopeScalingType::linear: expect_finite_positive("factor", c.factor, c); break;
    case RopeScalingType::llama3:
      expect_finite_positive("factor", c.factor, c);
      expect_finite_positive("low_freq_factor", c.low_freq_factor, c);
      expect_finite_positive("high_freq_factor", c.high_freq_factor, c);
      expect_finite_positive("original_max_position_embeddings", c.original_max_position_embeddings, c);
      FK_CHECK(c.high_freq_factor > c.low_freq_factor, "rope config (llama3): high_freq_factor (", c.high_freq_factor,
               ") must be greater than low_freq_factor (", c.low_freq_factor, ")");
      break;
    case RopeScalingType::yarn: {
      expect_finite_positive("factor", c.factor, c);
      expect_finite_positive("beta_fast", c.beta_fast, c);
      expect_finite_positive("beta_slow", c.beta_slow, c);
      expect_finite_positive("original_max_position_embeddings", c.original_max_position_embeddings, c);
      FK_CHECK(c.theta != 1.0, "rope config (yarn): theta must not be 1 (the correction range divides by log(theta))");
      FK_CHECK(std::isfinite(c.attention_factor) && c.attention_factor >= 0,
               "rope config (yarn): attention_factor must be >= 0 (0 = derive from factor and mscale), got ",
               c.attention_factor);
      FK_CHECK(std::isfinite(c.mscale) && std::isfinite(c.mscale_all_dim),
               "rope config (yarn): mscale and mscale_all_dim must be finite, got ", c.mscale, " and ",
               c.mscale_all_dim);
      const double attn = rope_attention_factor(c);
      FK_CHECK(std::isfinite(attn) && attn > 0, "rope config (yarn): the attention factor derived from factor ",
               c.factor, ", mscale ", c.mscale, " and mscale_all_dim ", c.mscale_all_dim,
               " is not finite and positive: ", attn);
      break;
    }
  }
}

Tensor make_rope_cos_sin_cache(const RopeConfig& config, int64_t max_pos, int64_t rot_dim, DType dtype, Device device,
                               void* stream) {
  FK_CHECK(max_pos >= 1, "make_rope_cos_sin_cache: max_pos must be positive, got ", max_pos);
  FK_CHECK(dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16,
           "make_rope_cos_sin_cache: dtype must be f32, f16 or bf16, got ", dtype_name(dtype));
  validate_rope_config(config, rot_dim);
  Tensor cache = Tensor::empty({max_pos, rot_dim}, dtype, device, stream);
  ops::RopeCosSinCacheArgs args{};
  args.cos_sin_cache = cache.view();
  args.config = config;
  call_op(args, device.type, stream);
  return cache;
}

}  // namespace fk
