// RoPE frequency tables: the inverse frequency of each rotary pair and the cos/sin cache
// that the rotary ops read, with the scaling variants of HF transformers
// (modeling_rope_utils.py: "default", "linear", "llama3", "yarn").
//
// Cache layout (vLLM's): cos_sin_cache[pos, i] = cos(pos * inv_freq[i]) * attention_factor
// and cos_sin_cache[pos, rot_dim/2 + i] = sin(pos * inv_freq[i]) * attention_factor, for
// i in [0, rot_dim/2). rot_dim is the rotated part of a head (head_dim * partial_rotary_factor).
//
// Precision: every value is computed in double (inv_freq, angle, cos/sin) and rounded once
// to the cache dtype. HF computes inv_freq and the angles in fp32, so at position p its
// values differ from these by up to about p * 2^-24 radians (~2e-3 at p = 32k); the
// exact values are the reference here. An f32 cache is the recommended dtype: a bf16
// cache alone puts ~4e-3 relative error into every rotated element.
//
// The formula functions are host/device inline so that the CPU reference and the CUDA
// builder share one definition; they assume a config that validate_rope_config accepted.
#pragma once
#include <math.h>

#include <cstdint>
#include <string>

#include "fk/tensor.h"

namespace fk {

enum class RopeScalingType : int32_t {
  none = 0,    // HF "default": inv_freq[i] = theta^(-2i / rot_dim)
  linear = 1,  // HF "linear": inv_freq / factor (positions interpolated by factor)
  llama3 = 2,  // HF "llama3" (Llama 3.1+): long wavelengths / factor, short kept, smooth between
  yarn = 3,    // HF "yarn": ramp between extrapolated and interpolated inv_freq, cos/sin * mscale
};

// The rope parameters of a model (HF config: rope_theta plus the rope_scaling dict).
// Crosses the op ABI inside RopeCosSinCacheArgs: standard layout, fixed-size fields.
struct RopeConfig {
  double theta = 10000.0;  // rope_theta
  RopeScalingType scaling = RopeScalingType::none;
  int32_t yarn_truncate = 1;  // yarn "truncate" (default true): floor/ceil the correction range
  double factor = 1.0;        // linear, llama3, yarn. HF yarn replaces a config's factor by
                              // max_position_embeddings / original_max_position_embeddings when
                              // rope_scaling names the latter: the caller passes that value here.
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // llama3 (old_context_len) and yarn (the pretraining context the correction range uses)
  double original_max_position_embeddings = 8192;
  // yarn
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double attention_factor = 0.0;  // > 0: used as given; 0: derived from factor and mscale as HF does
  double mscale = 0.0;            // 0 = not set (HF None)
  double mscale_all_dim = 0.0;    // 0 = not set (HF None)
};

inline constexpr double kRopePi = 3.14159265358979323846;

// theta^(-2i / rot_dim): the unscaled frequency of rotary pair i.
FK_HD inline double rope_base_inv_freq(double theta, int rot_dim, int i) {
  return 1.0 / ::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rot_dim));
}

// YaRN: the (fractional) pair index whose wavelength completes `num_rotations` turns over
// the original context.
FK_HD inline double rope_yarn_correction_dim(double num_rotations, int rot_dim, double theta,
                                             double original_max_position_embeddings) {
  return static_cast<double>(rot_dim) * ::log(original_max_position_embeddings / (num_rotations * 2.0 * kRopePi)) /
         (2.0 * ::log(theta));
}

// YaRN correction range [low, high] over pair indices: below low the original frequency is
// kept (extrapolation), above high it is divided by factor (interpolation). As HF, the
// range is clamped to [0, rot_dim - 1] (sic: rot_dim, not rot_dim / 2).
FK_HD inline void rope_yarn_correction_range(const RopeConfig& c, int rot_dim, double* low, double* high) {
  double lo = rope_yarn_correction_dim(c.beta_fast, rot_dim, c.theta, c.original_max_position_embeddings);
  double hi = rope_yarn_correction_dim(c.beta_slow, rot_dim, c.theta, c.original_max_position_embeddings);
  if (c.yarn_truncate) {
    lo = ::floor(lo);
    hi = ::ceil(hi);
  }
  *low = ::fmax(lo, 0.0);
  *high = ::fmin(hi, static_cast<double>(rot_dim - 1));
}

// YaRN ramp in [0, 1] at pair index i: 0 keeps the original frequency, 1 divides it by factor.
FK_HD inline double rope_yarn_ramp(double low, double high, int i) {
  if (low == high) high += 0.001;  // as HF: avoids a division by zero
  const double r = (static_cast<double>(i) - low) / (high - low);
  return ::fmin(::fmax(r, 0.0), 1.0);
}

// The inverse frequency of rotary pair i in [0, rot_dim / 2) under the config's scaling.
FK_HD inline double rope_inv_freq(const RopeConfig& c, int rot_dim, int i) {
  const double inv = rope_base_inv_freq(c.theta, rot_dim, i);
  switch (c.scaling) {
    case RopeScalingType::none: return inv;
    case RopeScalingType::linear: return inv / c.factor;
    case RopeScalingType::llama3: {
      const double old_context = c.original_max_position_embeddings;
      const double wavelen = 2.0 * kRopePi / inv;
      if (wavelen < old_context / c.high_freq_factor) return inv;      // high frequency: unchanged
      if (wavelen > old_context / c.low_freq_factor) return inv / c.factor;  // low frequency: scaled
      const double smooth = (old_context / wavelen - c.low_freq_factor) / (c.high_freq_factor - c.low_freq_factor);
      return (1.0 - smooth) * inv / c.factor + smooth * inv;
    }
    case RopeScalingType::yarn: {
      double low, high;
      rope_yarn_correction_range(c, rot_dim, &low, &high);
      const double ramp = rope_yarn_ramp(low, high, i);
      return (inv / c.factor) * ramp + inv * (1.0 - ramp);
    }
  }
  return inv;
}

// YaRN's get_mscale: 1 + 0.1 * mscale * ln(scale) for scale > 1, else 1.
FK_HD inline double rope_yarn_get_mscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * ::log(scale) + 1.0;
}

// The factor cos and sin are multiplied by (HF "attention_factor" / "attention_scaling").
FK_HD inline double rope_attention_factor(const RopeConfig& c) {
  if (c.scaling != RopeScalingType::yarn) return 1.0;
  if (c.attention_factor > 0) return c.attention_factor;
  if (c.mscale != 0 && c.mscale_all_dim != 0)
    return rope_yarn_get_mscale(c.factor, c.mscale) / rope_yarn_get_mscale(c.factor, c.mscale_all_dim);
  return rope_yarn_get_mscale(c.factor, 1.0);
}

// Throws fk::Error naming the field when a config cannot make a finite cache.
void validate_rope_config(const RopeConfig& c, int64_t rot_dim);

// "llama3" -> RopeScalingType::llama3; also accepts HF's "default" for none. Throws on
// anything else.
RopeScalingType rope_scaling_from_name(const std::string& name);
const char* rope_scaling_name(RopeScalingType t);

// Builds cos_sin_cache[max_pos, rot_dim] on `device` through the registry's
// rope_cos_sin_cache op (CPU reference or CUDA baseline). dtype: f32 (recommended),
// f16 or bf16.
Tensor make_rope_cos_sin_cache(const RopeConfig& config, int64_t max_pos, int64_t rot_dim,
                               DType dtype = DType::f32, Device device = Device::cpu(),
                               void* stream = nullptr);

}  // namespace fk
