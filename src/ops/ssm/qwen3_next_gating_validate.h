// Argument checks of gdn_gating and sigmoid_mul (fk/ops/ssm_gating.h), shared by their CPU
// references and CUDA baselines. `backend` is where the implementation runs: every tensor
// must live there, and the CPU implementation (also the oracle) accepts f64 for the tensors
// it writes.
#pragma once
#include <utility>

#include "fk/ops/ssm_gating.h"
#include "ops/activation/activation_validate.h"
#include "ops/common/validate.h"

namespace fk::ops {

inline void validate_gdn_gating(const GdnGatingArgs& a, DeviceType backend) {
  constexpr const char* op = GdnGatingArgs::kName;
  expect_activation_rows(op, "a", a.a, backend);
  expect_dtype_in(op, "a", a.a, {DType::f32, DType::f16, DType::bf16});
  expect_activation_rows(op, "b", a.b, backend);
  expect_same_shape(op, "b", a.b, "a", a.a);
  expect_dtype(op, "b", a.b, a.a.dtype);
  const int64_t hv = a.a.shape[1];
  for (const auto& [name, t] : {std::pair<const char*, const TensorView&>{"a_log", a.a_log}, {"dt_bias", a.dt_bias}}) {
    FK_CHECK(t.rank == 1 && t.shape[0] == hv, op, ": ", name, " must be [", hv, "] (one per value head), got ",
             describe(t));
    expect_dtype(op, name, t, DType::f32);
    expect_device(op, name, t, backend);
  }
  expect_same_shape(op, "g", a.g, "a", a.a);
  expect_contiguous(op, "g", a.g);
  expect_written_dtype(op, "g", a.g, DType::f32, backend);
  expect_device(op, "g", a.g, backend);
  expect_same_shape(op, "beta", a.beta, "a", a.a);
  expect_contiguous(op, "beta", a.beta);
  FK_CHECK(a.beta.dtype == DType::f32 || a.beta.dtype == a.a.dtype || (backend == DeviceType::cpu && a.beta.dtype == DType::f64),
           op, ": beta must be f32 or ", dtype_name(a.a.dtype), " (the dtype of a), got ", describe(a.beta));
  expect_device(op, "beta", a.beta, backend);
  for (const auto& [name, t] : {std::pair<const char*, const TensorView&>{"a", a.a}, {"b", a.b}}) {
    expect_no_overlap(op, "g", a.g, name, t);
    expect_no_overlap(op, "beta", a.beta, name, t);
  }
  expect_no_overlap(op, "g", a.g, "beta", a.beta);
}

inline void validate_sigmoid_mul(const SigmoidMulArgs& a, DeviceType backend) {
  constexpr const char* op = SigmoidMulArgs::kName;
  expect_activation_input(op, a.input, backend);
  expect_activation_rows(op, "gate", a.gate, backend);
  expect_same_shape(op, "gate", a.gate, "input", a.input);
  expect_dtype(op, "gate", a.gate, a.input.dtype);
  expect_activation_rows(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_no_overlap(op, "out", a.out, "gate", a.gate);
  expect_no_overlap(op, "out", a.out, "input", a.input);
}

}  // namespace fk::ops
