// Argument checks of the activation ops, shared by their CPU and CUDA implementations.
// `backend` is where the implementation runs: every tensor must live there, and the CPU
// implementation (also the oracle) accepts f64 for the tensors it writes.
#pragma once
#include <climits>

#include "fk/ops/activation.h"
#include "ops/common/validate.h"

namespace fk::ops {

// A [T, cols] activation matrix: rows contiguous and not overlapping, sizes that fit the
// kernels' 32-bit column indices and grid.
inline void expect_activation_rows(const char* op, const char* arg, const TensorView& v, DeviceType backend) {
  expect_rank(op, arg, v, 2);
  expect_device(op, arg, v, backend);
  expect_rows_contiguous(op, arg, v);
  FK_CHECK(v.shape[0] <= INT_MAX && v.shape[1] <= INT_MAX, op, ": ", arg,
           " needs at most 2^31-1 rows and columns, got ", describe(v));
  FK_CHECK(v.shape[0] <= 1 || v.strides[0] >= v.shape[1], op, ": ", arg, " rows must not overlap (row stride ",
           v.strides[0], " < row length ", v.shape[1], ")");
}

inline void expect_activation_input(const char* op, const TensorView& input, DeviceType backend) {
  expect_activation_rows(op, "input", input, backend);
  expect_dtype_in(op, "input", input, {DType::f32, DType::f16, DType::bf16});
}

// out = act(input), element-wise: same shape, the input's dtype.
template <class A>
void validate_elementwise(const A& a, DeviceType backend) {
  const char* op = A::kName;
  expect_activation_input(op, a.input, backend);
  expect_activation_rows(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_no_overlap(op, "out", a.out, "input", a.input);
}

// out[t, :d] = act(input[t, :d]) * input[t, d:2d].
template <class A>
void validate_gated(const A& a, DeviceType backend) {
  const char* op = A::kName;
  expect_activation_input(op, a.input, backend);
  FK_CHECK(a.input.shape[1] % 2 == 0, op, ": input must be [T, 2d] (gate | up), its last dimension is odd: ",
           describe(a.input));
  expect_activation_rows(op, "out", a.out, backend);
  const int64_t d = a.input.shape[1] / 2;
  FK_CHECK(a.out.shape[0] == a.input.shape[0] && a.out.shape[1] == d, op, ": out must be [", a.input.shape[0],
           ", ", d, "] for input ", describe(a.input), ", got ", describe(a.out));
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_no_overlap(op, "out", a.out, "input", a.input);
}

inline void expect_gelu_approx(const char* op, GeluApprox g) {
  FK_CHECK(g == GeluApprox::none || g == GeluApprox::tanh, op, ": approximate must be none (0) or tanh (1), got ",
           static_cast<int>(g));
}

inline void validate_logit_softcap(const LogitSoftcapArgs& a, DeviceType backend) {
  const char* op = LogitSoftcapArgs::kName;
  expect_activation_rows(op, "logits", a.logits, backend);
  if (backend == DeviceType::cpu)
    expect_dtype_in(op, "logits", a.logits, {DType::f32, DType::f16, DType::bf16, DType::f64});
  else
    expect_dtype_in(op, "logits", a.logits, {DType::f32, DType::f16, DType::bf16});
  FK_CHECK(a.cap > 0 && a.cap < INFINITY, op, ": cap must be positive and finite, got ", a.cap);
}

}  // namespace fk::ops
