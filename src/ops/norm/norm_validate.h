// Argument checks of the norm ops, shared by their CPU and CUDA implementations. `backend`
// is where the implementation runs: every tensor must live there, and the CPU
// implementation (also the oracle) accepts f64 for the tensors it writes.
#pragma once
#include <climits>

#include "fk/ops/norm.h"
#include "ops/common/validate.h"

namespace fk::ops {

// [T, H] activations of a norm: f32/f16/bf16 (or f64 where the CPU oracle writes), rows
// contiguous, sizes the kernels index with 32-bit row positions and grid dimensions.
inline void expect_norm_rows(const char* op, const char* arg, const TensorView& v, DeviceType backend) {
  expect_rank(op, arg, v, 2);
  expect_device(op, arg, v, backend);
  expect_rows_contiguous(op, arg, v);
  FK_CHECK(v.shape[1] > 0 && v.shape[1] <= INT_MAX && v.shape[0] <= INT_MAX, op, ": ", arg,
           " needs 0 <= rows <= 2^31-1 and 1 <= hidden <= 2^31-1, got ", describe(v));
  FK_CHECK(v.shape[0] <= 1 || v.strides[0] >= v.shape[1], op, ": ", arg, " rows must not overlap (row stride ",
           v.strides[0], " < hidden ", v.shape[1], ")");
}

// weight / bias: contiguous [H] of the model dtype.
inline void expect_norm_param(const char* op, const char* arg, const TensorView& v, int64_t H, DType model,
                              DeviceType backend) {
  expect_rank(op, arg, v, 1);
  expect_device(op, arg, v, backend);
  expect_dim(op, arg, v, 0, H);
  expect_dtype(op, arg, v, model);
  expect_contiguous(op, arg, v);
}

inline void expect_positive_eps(const char* op, float eps) {
  FK_CHECK(eps > 0, op, ": eps must be positive, got ", eps);
}

// rms_norm, gemma_rms_norm: the model dtype is input's.
template <class A>
void validate_rms_norm(const A& a, DeviceType backend) {
  const char* op = A::kName;
  expect_norm_rows(op, "input", a.input, backend);
  expect_dtype_in(op, "input", a.input, {DType::f32, DType::f16, DType::bf16});
  expect_norm_rows(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_norm_param(op, "weight", a.weight, a.input.shape[1], a.input.dtype, backend);
  expect_no_overlap(op, "out", a.out, "input", a.input);
  expect_positive_eps(op, a.eps);
}

// fused_add_rms_norm, gemma_fused_add_rms_norm: input and residual are both updated, so
// both may be f64 in the oracle; the model dtype is the weight's.
template <class A>
void validate_fused_add_rms_norm(const A& a, DeviceType backend) {
  const char* op = A::kName;
  expect_dtype_in(op, "weight", a.weight, {DType::f32, DType::f16, DType::bf16});
  expect_norm_rows(op, "input", a.input, backend);
  expect_written_dtype(op, "input", a.input, a.weight.dtype, backend);
  expect_norm_rows(op, "residual", a.residual, backend);
  expect_same_shape(op, "residual", a.residual, "input", a.input);
  expect_written_dtype(op, "residual", a.residual, a.weight.dtype, backend);
  expect_norm_param(op, "weight", a.weight, a.input.shape[1], a.weight.dtype, backend);
  expect_no_overlap(op, "input", a.input, "residual", a.residual);
  expect_no_overlap(op, "input", a.input, "weight", a.weight);
  expect_no_overlap(op, "residual", a.residual, "weight", a.weight);
  expect_positive_eps(op, a.eps);
}

inline void validate_layer_norm(const LayerNormArgs& a, DeviceType backend) {
  const char* op = LayerNormArgs::kName;
  expect_norm_rows(op, "input", a.input, backend);
  expect_dtype_in(op, "input", a.input, {DType::f32, DType::f16, DType::bf16});
  expect_norm_rows(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_norm_param(op, "weight", a.weight, a.input.shape[1], a.input.dtype, backend);
  if (a.bias.data != nullptr) expect_norm_param(op, "bias", a.bias, a.input.shape[1], a.input.dtype, backend);
  expect_no_overlap(op, "out", a.out, "input", a.input);
  expect_positive_eps(op, a.eps);
}

inline void validate_add_layer_norm(const AddLayerNormArgs& a, DeviceType backend) {
  const char* op = AddLayerNormArgs::kName;
  expect_norm_rows(op, "input", a.input, backend);
  expect_dtype_in(op, "input", a.input, {DType::f32, DType::f16, DType::bf16});
  expect_norm_rows(op, "residual", a.residual, backend);
  expect_same_shape(op, "residual", a.residual, "input", a.input);
  expect_written_dtype(op, "residual", a.residual, a.input.dtype, backend);
  expect_norm_rows(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_norm_param(op, "weight", a.weight, a.input.shape[1], a.input.dtype, backend);
  if (a.bias.data != nullptr) expect_norm_param(op, "bias", a.bias, a.input.shape[1], a.input.dtype, backend);
  expect_no_overlap(op, "out", a.out, "input", a.input);
  expect_no_overlap(op, "residual", a.residual, "input", a.input);
  // In place on the residual, or apart from it: a partial overlap would read rows already written.
  if (a.out.data != a.residual.data || a.out.strides[0] != a.residual.strides[0])
    expect_no_overlap(op, "out", a.out, "residual", a.residual);
  expect_positive_eps(op, a.eps);
}

}  // namespace fk::ops
