// Argument checks of embedding, shared by its CPU and CUDA implementations. `backend` is
// where the implementation runs: every tensor must live there, and the CPU implementation
// (also the oracle) accepts an f64 out.
#pragma once
#include <climits>

#include "fk/ops/embedding.h"
#include "ops/common/validate.h"

namespace fk::ops {

inline void validate_embedding(const EmbeddingArgs& a, DeviceType backend) {
  constexpr const char* op = EmbeddingArgs::kName;
  expect_rank(op, "table", a.table, 2);
  expect_device(op, "table", a.table, backend);
  expect_dtype_in(op, "table", a.table, {DType::f32, DType::f16, DType::bf16});
  expect_rows_contiguous(op, "table", a.table);
  FK_CHECK(a.table.shape[1] <= INT_MAX, op, ": table rows longer than 2^31-1 elements: ", describe(a.table));

  expect_rank(op, "ids", a.ids, 1);
  expect_device(op, "ids", a.ids, backend);
  expect_dtype_in(op, "ids", a.ids, {DType::i32, DType::i64});
  expect_contiguous(op, "ids", a.ids);
  FK_CHECK(a.ids.shape[0] <= INT_MAX, op, ": at most 2^31-1 tokens, got ", describe(a.ids));

  expect_rank(op, "out", a.out, 2);
  expect_device(op, "out", a.out, backend);
  FK_CHECK(a.out.shape[0] == a.ids.shape[0] && a.out.shape[1] == a.table.shape[1], op, ": out must be [",
           a.ids.shape[0], ", ", a.table.shape[1], "] (tokens x hidden), got ", describe(a.out));
  expect_rows_contiguous(op, "out", a.out);
  FK_CHECK(a.out.shape[0] <= 1 || a.out.strides[0] >= a.out.shape[1], op, ": out rows must not overlap, got row stride ",
           a.out.strides[0]);
  expect_written_dtype(op, "out", a.out, a.table.dtype, backend);
  expect_no_overlap(op, "out", a.out, "table", a.table);
  expect_no_overlap(op, "out", a.out, "ids", a.ids);
}

}  // namespace fk::ops
