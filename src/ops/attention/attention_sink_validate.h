// Argument checks of attention_sink_rescale (fk/ops/attention_sink.h), shared by its CPU
// reference and CUDA baseline. `backend` is where the implementation runs: every tensor
// must live there, and the CPU implementation (also the oracle) accepts f64 for `out`.
#pragma once
#include <cstdint>

#include "fk/ops/attention_sink.h"
#include "ops/common/validate.h"

namespace fk::ops {

inline void validate_attention_sink_rescale(const AttentionSinkRescaleArgs& a, DeviceType backend) {
  constexpr const char* op = AttentionSinkRescaleArgs::kName;
  FK_CHECK(a.out.data != nullptr || a.out.numel() == 0, op, ": out is missing");
  expect_rank(op, "out", a.out, 3);
  expect_device(op, "out", a.out, backend);
  FK_CHECK(a.out.dtype == DType::f32 || a.out.dtype == DType::f16 || a.out.dtype == DType::bf16 ||
               (backend == DeviceType::cpu && a.out.dtype == DType::f64),
           op, ": out must be f32/f16/bf16, got ", describe(a.out));
  const int64_t T = a.out.shape[0], H = a.out.shape[1], D = a.out.shape[2];
  FK_CHECK((a.out.strides[2] == 1 || D <= 1) && (a.out.strides[1] == D || H <= 1) && a.out.strides[0] >= H * D, op,
           ": out must have packed heads and head dims (row stride free), got ", describe(a.out));
  FK_CHECK(a.lse.rank == 2 && a.lse.shape[0] == T && a.lse.shape[1] == H, op, ": lse must be f32[", T, ", ", H,
           "] (one log-sum-exp per token and head of out), got ", describe(a.lse));
  expect_dtype(op, "lse", a.lse, DType::f32);
  expect_contiguous(op, "lse", a.lse);
  expect_device(op, "lse", a.lse, backend);
  FK_CHECK(a.sinks.rank == 1 && a.sinks.shape[0] == H, op, ": sinks must be f32[", H,
           "] (one sink logit per query head of out), got ", describe(a.sinks));
  expect_dtype(op, "sinks", a.sinks, DType::f32);
  expect_device(op, "sinks", a.sinks, backend);
  expect_no_overlap(op, "out", a.out, "lse", a.lse);
  expect_no_overlap(op, "out", a.out, "sinks", a.sinks);
}

}  // namespace fk::ops
