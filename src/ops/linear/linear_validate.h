// Argument checks of the linear op, shared by its CPU reference and CUDA baseline.
#pragma once
#include "fk/ops/linear.h"
#include "ops/common/validate.h"

namespace fk::ops {

// Row stride of a [rows, cols] matrix as a GEMM's leading dimension: a single row may carry
// any stride, so its leading dimension is its width.
inline int64_t leading_dim(const TensorView& v) { return v.shape[0] <= 1 ? v.shape[1] : v.strides[0]; }

// Rows of a [rows, cols] matrix must not overlap (a single row may have any stride).
inline void expect_rows_disjoint(const char* op, const char* arg, const TensorView& v) {
  FK_CHECK(v.shape[0] <= 1 || v.strides[0] >= v.shape[1], op, ": ", arg, " rows overlap: row stride ",
           v.strides[0], " < ", v.shape[1], " columns, ", describe(v));
}

// `out` may be f64 when the CPU reference runs as the oracle.
inline void validate_linear(const LinearArgs& a) {
  constexpr const char* op = LinearArgs::kName;
  expect_rank(op, "input", a.input, 2);
  expect_rank(op, "weight", a.weight, 2);
  expect_rank(op, "out", a.out, 2);
  expect_dtype_in(op, "input", a.input, {DType::bf16, DType::f16, DType::f8e4m3fn});
  expect_dtype(op, "weight", a.weight, a.input.dtype);
  const int64_t M = a.input.shape[0], K = a.input.shape[1], N = a.weight.shape[0];
  FK_CHECK(K > 0, op, ": K (input features) must be positive, got input ", describe(a.input));
  expect_dim(op, "weight", a.weight, 1, K);
  expect_dim(op, "out", a.out, 0, M);
  expect_dim(op, "out", a.out, 1, N);
  expect_rows_contiguous(op, "input", a.input);
  expect_rows_contiguous(op, "weight", a.weight);
  expect_rows_contiguous(op, "out", a.out);
  expect_rows_disjoint(op, "input", a.input);
  expect_rows_disjoint(op, "weight", a.weight);
  expect_rows_disjoint(op, "out", a.out);

  const bool fp8 = a.input.dtype == DType::f8e4m3fn;
  if (a.out.dtype != DType::f64) {
    if (fp8) expect_dtype_in(op, "out", a.out, {DType::bf16, DType::f16});
    else expect_dtype(op, "out", a.out, a.input.dtype);
  }
  if (arg_present(a.bias)) {
    expect_rank(op, "bias", a.bias, 1);
    expect_dim(op, "bias", a.bias, 0, N);
    expect_contiguous(op, "bias", a.bias);
    if (a.out.dtype != DType::f64) expect_dtype(op, "bias", a.bias, a.out.dtype);
    else expect_dtype_in(op, "bias", a.bias, {DType::bf16, DType::f16});
  }
  const bool has_a = arg_present(a.scale_a), has_b = arg_present(a.scale_b);
  if (fp8) {
    FK_CHECK(has_a && has_b, op, ": fp8 input needs scale_a and scale_b (1-element f32 tensors)");
    expect_dtype(op, "scale_a", a.scale_a, DType::f32);
    expect_dtype(op, "scale_b", a.scale_b, DType::f32);
    FK_CHECK(a.scale_a.numel() == 1, op, ": scale_a must hold one element (per-tensor scale), got ",
             describe(a.scale_a));
    FK_CHECK(a.scale_b.numel() == 1, op, ": scale_b must hold one element (per-tensor scale), got ",
             describe(a.scale_b));
  } else {
    FK_CHECK(!has_a && !has_b, op, ": scale_a/scale_b are for fp8 input only, input is ", describe(a.input));
  }
}

// Every tensor the call uses lives on `backend`.
inline void expect_linear_device(const LinearArgs& a, DeviceType backend) {
  constexpr const char* op = LinearArgs::kName;
  expect_device(op, "out", a.out, backend);
  expect_device(op, "input", a.input, backend);
  expect_device(op, "weight", a.weight, backend);
  if (arg_present(a.bias)) expect_device(op, "bias", a.bias, backend);
  if (arg_present(a.scale_a)) expect_device(op, "scale_a", a.scale_a, backend);
  if (arg_present(a.scale_b)) expect_device(op, "scale_b", a.scale_b, backend);
}

}  // namespace fk::ops
