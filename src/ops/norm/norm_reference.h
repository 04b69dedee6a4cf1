// CPU references of the norm family, accumulating in double. They read and write through
// fk::get / fk::set, so one function is both the CPU backend (tensors of the model dtype)
// and the oracle (written tensors in f64), and any row stride works.
#pragma once
#include <cmath>
#include <vector>

#include "fk/element.h"

namespace fk::ops {

// x rounded to dtype t: what storing it in a tensor of dtype t and reading it back gives.
inline double round_to_dtype(double x, DType t) {
  alignas(8) unsigned char buf[8];
  store_element(buf, t, x);
  return load_element(buf, t);
}

// How the normalised row is scaled: by w (Llama, Qwen, Mistral) or by 1 + w (Gemma).
enum class NormScale { weight, one_plus_weight };

inline double norm_scale(double w, NormScale s) { return s == NormScale::weight ? w : 1.0 + w; }

// out[t, :] = x * rsqrt(mean(x^2) + eps) * scale(weight), per row, where x is input[t, :];
// or, with a residual, residual[t, :] = round(input[t, :] + residual[t, :]) and x is that
// rounded residual. The rounding is to the model dtype (the weight's): in the oracle the
// updated tensors are f64 copies, and the oracle must normalise the same values the
// implementations under test normalise, which is the residual they store.
// `out` may be `input` (fused add works in place): each row is read before it is written.
inline void rms_norm_reference(const TensorView& out, const TensorView& input, const TensorView* residual,
                               const TensorView& weight, float eps, NormScale scale) {
  const int64_t T = input.shape[0], H = input.shape[1];
  const DType model = weight.dtype;
  std::vector<double> x(static_cast<size_t>(H));
  for (int64_t t = 0; t < T; ++t) {
    double sum_sq = 0;
    for (int64_t h = 0; h < H; ++h) {
      double v = get(input, t, h);
      if (residual) {
        v = round_to_dtype(v + get(*residual, t, h), model);
        set(*residual, v, t, h);
      }
      x[h] = v;
      sum_sq += v * v;
    }
    const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(H) + static_cast<double>(eps));
    for (int64_t h = 0; h < H; ++h) set(out, x[h] * inv_rms * norm_scale(get(weight, h), scale), t, h);
  }
}

// out[t, :] = (x - mean) * rsqrt(var + eps) * weight (+ bias), two passes in double.
// `bias` may be null (no bias). With `residual`, x = round_to_dtype(input + residual) (the
// residual is read only; out may be the residual itself: a row is read before it is written).
inline void layer_norm_reference(const TensorView& out, const TensorView& input, const TensorView& weight,
                                 const TensorView* bias, float eps, const TensorView* residual = nullptr) {
  const int64_t T = input.shape[0], H = input.shape[1];
  std::vector<double> x(static_cast<size_t>(H));
  for (int64_t t = 0; t < T; ++t) {
    double sum = 0;
    for (int64_t h = 0; h < H; ++h) {
      x[h] = get(input, t, h);
      if (residual) x[h] = round_to_dtype(x[h] + get(*residual, t, h), weight.dtype);
      sum += x[h];
    }
    const double mean = sum / static_cast<double>(H);
    double sum_sq_dev = 0;
    for (int64_t h = 0; h < H; ++h) sum_sq_dev += (x[h] - mean) * (x[h] - mean);
    const double inv_std = 1.0 / std::sqrt(sum_sq_dev / static_cast<double>(H) + static_cast<double>(eps));
    for (int64_t h = 0; h < H; ++h) {
      double y = (x[h] - mean) * inv_std * get(weight, h);
      if (bias) y += get(*bias, h);
      set(out, y, t, h);
    }
  }
}

}  // namespace fk::ops
