// Argument checks of the norm ops, shared by their CPU and CUDA implementations.
#pragma once
#include "fk/ops/norm.h"
#include "ops/common/validate.h"

namespace fk::ops {

inline void validate_rms_norm(const RmsNormArgs& a) {
  constexpr const char* op = RmsNormArgs::kName;
  expect_rank(op, "input", a.input, 2);
  expect_dtype_in(op, "input", a.input, {DType::f32, DType::f16, DType::bf16});
  expect_rows_contiguous(op, "input", a.input);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_rows_contiguous(op, "out", a.out);
  expect_rank(op, "weight", a.weight, 1);
  expect_dim(op, "weight", a.weight, 0, a.input.shape[1]);
  expect_dtype(op, "weight", a.weight, a.input.dtype);
  expect_contiguous(op, "weight", a.weight);
  FK_CHECK(a.eps > 0, op, ": eps must be positive, got ", a.eps);
}

}  // namespace fk::ops
