#include "ops/linear/linear_tolerance.h"

#include <cmath>

#include "fk/element.h"
#include "ops/linear/linear_validate.h"

namespace fk::ops {

double tensor_rms(const TensorView& v) {
  const int64_t n = v.numel();
  if (n == 0) return 0;
  const int64_t cols = v.shape[v.rank - 1];
  double sum_sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = v.rank == 1 ? get(v, i) : get(v, i / cols, i % cols);
    sum_sq += x * x;
  }
  return std::sqrt(sum_sq / static_cast<double>(n));
}

Tolerance linear_tolerance(const LinearArgs& a, DType out_dtype) {
  Tolerance tol = default_tolerance(out_dtype);
  const double K = static_cast<double>(a.input.shape[1]);
  const bool fp8 = a.input.dtype == DType::f8e4m3fn;
  double scale = 1;
  if (fp8 && arg_present(a.scale_a) && arg_present(a.scale_b))
    scale = std::fabs(load_element(a.scale_a.data, DType::f32) * load_element(a.scale_b.data, DType::f32));
  const double typical = std::sqrt(K) * tensor_rms(a.input) * tensor_rms(a.weight) * scale;
  const double eps = fp8 ? std::ldexp(1.0, -13) : std::ldexp(1.0, -24);
  const double steps = fp8 ? std::ceil(K / 32) : K;
  tol.atol += 4 * eps * std::sqrt(steps) * typical;
  return tol;
}

}  // namespace fk::ops
