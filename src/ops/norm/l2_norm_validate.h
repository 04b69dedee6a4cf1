// Argument checks of l2_norm, shared by its CPU reference and CUDA baseline (the row rules
// of the norm ops: norm_validate.h).
#pragma once
#include "fk/ops/norm.h"
#include "ops/norm/norm_validate.h"

namespace fk::ops {

inline void validate_l2_norm(const L2NormArgs& a, DeviceType backend) {
  constexpr const char* op = L2NormArgs::kName;
  expect_norm_rows(op, "input", a.input, backend);
  expect_dtype_in(op, "input", a.input, {DType::f32, DType::f16, DType::bf16});
  expect_norm_rows(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_no_overlap(op, "out", a.out, "input", a.input);
  expect_positive_eps(op, a.eps);
}

}  // namespace fk::ops
