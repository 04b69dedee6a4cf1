#include "ops/linear/linear_tolerance.h"

#include <cmath>

#include "fk/element.h"
#include "ops/linear/linear_validate.h"

namespace fk::ops {
namespace {

double rms(const TensorView& m) {
  const int64_t rows = m.shape[0], cols = m.shape[1];
  if (rows * cols == 0) return 0;
  double sum_sq = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      const double x = get(m, r, c);
      sum_sq += x * x;
    }
  return std::sqrt(sum_sq / static_cast<double>(rows * cols));
}

}  // namespace

Tolerance linear_tolerance(const LinearArgs& a, DType out_dtype) {
  Tolerance tol = default_tolerance(out_dtype);
  const double K = static_cast<double>(a.input.shape[1]);
  const bool fp8 = a.input.dtype == DType::f8e4m3fn;
  double scale = 1;
  if (fp8 && linear_has(a.scale_a) && linear_has(a.scale_b))
    scale = std::fabs(load_element(a.scale_a.data, DType::f32) * load_element(a.scale_b.data, DType::f32));
  const double typical = std::sqrt(K) * rms(a.input) * rms(a.weight) * scale;
  const double eps = fp8 ? std::ldexp(1.0, -13) : std::ldexp(1.0, -24);
  const double steps = fp8 ? std::ceil(K / 32) : K;
  tol.atol += 4 * eps * std::sqrt(steps) * typical;
  return tol;
}

}  // namespace fk::ops
