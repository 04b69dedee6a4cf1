// Argument checks of weighted_embedding_add, shared by its CPU reference and CUDA baseline.
// `backend` is where the implementation runs: every tensor must live there, and the CPU
// implementation (also the oracle) accepts an f64 out (the oracle's copy of an updated tensor).
#pragma once
#include <climits>

#include "fk/ops/weighted_embedding.h"
#include "ops/common/validate.h"

namespace fk::ops {

inline constexpr int64_t kWeightedEmbeddingMaxTaps = 16;

inline void validate_weighted_embedding_add(const WeightedEmbeddingAddArgs& a, DeviceType backend) {
  constexpr const char* op = WeightedEmbeddingAddArgs::kName;
  expect_rank(op, "table", a.table, 2);
  expect_device(op, "table", a.table, backend);
  expect_dtype_in(op, "table", a.table, {DType::f32, DType::f16, DType::bf16});
  expect_rows_contiguous(op, "table", a.table);
  FK_CHECK(a.table.shape[1] <= INT_MAX, op, ": table rows longer than 2^31-1 elements: ", describe(a.table));

  expect_rank(op, "ids", a.ids, 2);
  expect_device(op, "ids", a.ids, backend);
  expect_dtype_in(op, "ids", a.ids, {DType::i32, DType::i64});
  expect_contiguous(op, "ids", a.ids);
  const int64_t T = a.ids.shape[0], K = a.ids.shape[1];
  FK_CHECK(K >= 1 && K <= kWeightedEmbeddingMaxTaps, op, ": ids must have 1 to ", kWeightedEmbeddingMaxTaps,
           " taps per token (columns), got ", describe(a.ids));
  FK_CHECK(T <= INT_MAX, op, ": at most 2^31-1 tokens, got ", describe(a.ids));

  expect_rank(op, "weights", a.weights, 2);
  expect_device(op, "weights", a.weights, backend);
  expect_dtype(op, "weights", a.weights, DType::f32);
  expect_contiguous(op, "weights", a.weights);
  FK_CHECK(a.weights.shape[0] == T && a.weights.shape[1] == K, op, ": weights must be [", T, ", ", K,
           "] like ids, got ", describe(a.weights));

  expect_rank(op, "out", a.out, 2);
  expect_device(op, "out", a.out, backend);
  FK_CHECK(a.out.shape[0] == T && a.out.shape[1] == a.table.shape[1], op, ": out must be [", T, ", ",
           a.table.shape[1], "] (tokens x hidden), got ", describe(a.out));
  expect_rows_contiguous(op, "out", a.out);
  FK_CHECK(a.out.shape[0] <= 1 || a.out.strides[0] >= a.out.shape[1], op, ": out rows must not overlap, got row stride ",
           a.out.strides[0]);
  expect_written_dtype(op, "out", a.out, a.table.dtype, backend);
  expect_no_overlap(op, "out", a.out, "table", a.table);
  expect_no_overlap(op, "out", a.out, "ids", a.ids);
  expect_no_overlap(op, "out", a.out, "weights", a.weights);
}

}  // namespace fk::ops
