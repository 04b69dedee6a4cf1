#include <cmath>

#include "fk/element.h"
#include "harness/check/outside_tolerance.h"

namespace fk::bench::detail {

int64_t count_outside_tolerance_host(const void* x, const void* ref, int64_t n, DType dtype, Tolerance tol) {
  const auto* xb = static_cast<const unsigned char*>(x);
  const auto* rb = static_cast<const unsigned char*>(ref);
  const auto es = static_cast<int64_t>(dtype_size(dtype));
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!dtype_is_float(dtype)) {
      bad += load_index(xb + i * es, dtype) != load_index(rb + i * es, dtype);
      continue;
    }
    const double v = load_element(xb + i * es, dtype), r = load_element(rb + i * es, dtype);
    if (!std::isfinite(r)) bad += !(std::isnan(r) ? std::isnan(v) : v == r);
    else bad += !std::isfinite(v) || std::fabs(v - r) > tol.atol + tol.rtol * std::fabs(r);
  }
  return bad;
}

}  // namespace fk::bench::detail
