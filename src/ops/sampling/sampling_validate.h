// Argument checks of the sampling ops, shared by their CPU reference and CUDA baseline.
#pragma once
#include "fk/ops/sampling.h"
#include "ops/common/validate.h"

namespace fk::ops {

inline void validate_sample(const SampleArgs& a) {
  constexpr const char* op = SampleArgs::kName;
  expect_rank(op, "logits", a.logits, 2);
  expect_dtype_in(op, "logits", a.logits, {DType::f32, DType::bf16});
  expect_rows_contiguous(op, "logits", a.logits);
  const int64_t B = a.logits.shape[0], V = a.logits.shape[1];
  FK_CHECK(V > 0, op, ": the vocabulary (logits dim 1) must not be empty, got ", describe(a.logits));
  FK_CHECK(B <= 1 || a.logits.strides[0] >= V, op, ": logits rows overlap, got row stride ", a.logits.strides[0],
           " for ", describe(a.logits));
  struct Param {
    const char* name;
    const TensorView* v;
    DType dtype;
  };
  const Param params[] = {{"out", &a.out, DType::i64},          {"temperature", &a.temperature, DType::f32},
                          {"top_k", &a.top_k, DType::i32},      {"top_p", &a.top_p, DType::f32},
                          {"min_p", &a.min_p, DType::f32},      {"seed", &a.seed, DType::i64},
                          {"offset", &a.offset, DType::i64}};
  for (const Param& p : params) {
    expect_rank(op, p.name, *p.v, 1);
    expect_dim(op, p.name, *p.v, 0, B);
    expect_dtype(op, p.name, *p.v, p.dtype);
    expect_contiguous(op, p.name, *p.v);
  }
}

inline void expect_sample_device(const SampleArgs& a, DeviceType backend) {
  constexpr const char* op = SampleArgs::kName;
  expect_device(op, "out", a.out, backend);
  expect_device(op, "logits", a.logits, backend);
  expect_device(op, "temperature", a.temperature, backend);
  expect_device(op, "top_k", a.top_k, backend);
  expect_device(op, "top_p", a.top_p, backend);
  expect_device(op, "min_p", a.min_p, backend);
  expect_device(op, "seed", a.seed, backend);
  expect_device(op, "offset", a.offset, backend);
}

}  // namespace fk::ops
