// Pieces of the double-precision oracles of triangle_attention and
// single_attention_pair_bias: LayerNorm of packed rows into f64, and pair_bias_attention's
// CPU baseline (its double-precision reference, never a candidate) called directly.
#pragma once
#include <cmath>
#include <cstdint>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/pairformer.h"
#include "fk/tensor.h"

namespace fk::ops {

// out [T, C] f64 = layer_norm(x [T, C]) * weight + bias, eps 1e-5, biased variance.
inline void layer_norm_f64(const TensorView& out, const TensorView& x, const TensorView& weight,
                           const TensorView& bias) {
  const int64_t T = x.shape[0], C = x.shape[1];
  for (int64_t t = 0; t < T; ++t) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += get(x, t, c);
    mean /= static_cast<double>(C);
    for (int64_t c = 0; c < C; ++c) var += (get(x, t, c) - mean) * (get(x, t, c) - mean);
    const double rstd = 1 / std::sqrt(var / static_cast<double>(C) + 1e-5);
    for (int64_t c = 0; c < C; ++c) set(out, (get(x, t, c) - mean) * rstd * get(weight, c) + get(bias, c), t, c);
  }
}

inline double sigmoid_f64(double x) { return 1 / (1 + std::exp(-x)); }

inline void pair_bias_attention_reference(const PairBiasAttentionArgs& a, const char* op) {
  const fk_op_fn ref = OpRegistry::global().baseline(PairBiasAttentionArgs::kName, DeviceType::cpu);
  FK_CHECK(ref != nullptr, op, ": pair_bias_attention has no CPU baseline");
  FK_CHECK(ref(&a, nullptr) == FK_OK, op, ": the pair_bias_attention reference failed: ", last_error_message());
}

}  // namespace fk::ops
