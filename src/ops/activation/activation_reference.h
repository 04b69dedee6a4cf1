// CPU references of the activation ops: the math in double, read and written through
// fk::get / fk::set (any row stride; f64 outputs for the oracle).
#pragma once
#include <cmath>
#include <numbers>

#include "fk/element.h"
#include "fk/ops/activation.h"

namespace fk::ops {

inline double silu_ref(double x) { return x / (1.0 + std::exp(-x)); }

inline double gelu_ref(double x, GeluApprox approx) {
  if (approx == GeluApprox::tanh) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

// max(x, 0)^2 with NaN passed through (torch.relu propagates NaN).
inline double relu2_ref(double x) { return x < 0 ? 0.0 : x * x; }

// out[t, j] = f(input[t, j]).
template <class F>
void elementwise_reference(const TensorView& out, const TensorView& input, F f) {
  for (int64_t t = 0; t < input.shape[0]; ++t)
    for (int64_t j = 0; j < input.shape[1]; ++j) set(out, f(get(input, t, j)), t, j);
}

// out[t, j] = act(input[t, j]) * input[t, d + j], d = out's columns.
template <class F>
void gated_reference(const TensorView& out, const TensorView& input, F act) {
  const int64_t d = out.shape[1];
  for (int64_t t = 0; t < out.shape[0]; ++t)
    for (int64_t j = 0; j < d; ++j) set(out, act(get(input, t, j)) * get(input, t, d + j), t, j);
}

}  // namespace fk::ops
