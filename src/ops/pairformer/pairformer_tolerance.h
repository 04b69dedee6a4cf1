// The unit in which the Pairformer ops' tolerances are written: one rounding of the model
// dtype (2^-8 for bf16, 2^-11 for f16), and 2^-20 for f32, whose runs are bounded by their
// fp32 accumulation rather than by one rounding.
#pragma once
#include <cmath>

#include "fk/dtype.h"

namespace fk::ops {

inline double pairformer_rounding_unit(DType dt) {
  if (dt == DType::bf16) return std::ldexp(1.0, -8);
  if (dt == DType::f16) return std::ldexp(1.0, -11);
  return std::ldexp(1.0, -20);
}

}  // namespace fk::ops
