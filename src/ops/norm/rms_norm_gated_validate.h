// Argument checks of rms_norm_gated, shared by its CPU reference and CUDA baseline (the
// row rules of the norm ops: norm_validate.h).
#pragma once
#include "fk/ops/norm.h"
#include "ops/norm/norm_validate.h"

namespace fk::ops {

inline void validate_rms_norm_gated(const RmsNormGatedArgs& a, DeviceType backend) {
  constexpr const char* op = RmsNormGatedArgs::kName;
  expect_norm_rows(op, "input", a.input, backend);
  expect_dtype_in(op, "input", a.input, {DType::f32, DType::f16, DType::bf16});
  expect_norm_rows(op, "gate", a.gate, backend);
  expect_same_shape(op, "gate", a.gate, "input", a.input);
  expect_dtype(op, "gate", a.gate, a.input.dtype);
  expect_norm_rows(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_norm_param(op, "weight", a.weight, a.input.shape[1], a.input.dtype, backend);
  expect_no_overlap(op, "out", a.out, "input", a.input);
  expect_no_overlap(op, "out", a.out, "gate", a.gate);
  expect_no_overlap(op, "out", a.out, "weight", a.weight);
  expect_positive_eps(op, a.eps);
  FK_CHECK(a.activation == NormGateActivation::silu || a.activation == NormGateActivation::sigmoid, op,
           ": activation must be silu (0) or sigmoid (1), got ", static_cast<int32_t>(a.activation));
}

}  // namespace fk::ops
