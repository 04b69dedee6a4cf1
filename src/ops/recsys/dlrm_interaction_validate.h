// Argument checks of dlrm_interaction, shared by its CPU reference and CUDA baseline.
// `backend` is where the implementation runs: every tensor must live there, and the CPU
// implementation, which is also the oracle, accepts an f64 out.
#pragma once
#include <climits>
#include <cstdint>

#include "fk/ops/recsys.h"
#include "ops/common/validate.h"

namespace fk::ops {

// Features of the interaction's output row: D copied, then the (F + 1) F / 2 pairs.
inline int64_t dlrm_interaction_width(int64_t dim, int64_t features) { return dim + (features + 1) * features / 2; }

inline void validate_dlrm_interaction(const DlrmInteractionArgs& a, DeviceType backend) {
  constexpr const char* op = DlrmInteractionArgs::kName;
  const TensorView &dense = a.dense, &sparse = a.sparse, &out = a.out;
  expect_rank(op, "dense", dense, 2);
  expect_device(op, "dense", dense, backend);
  expect_dtype_in(op, "dense", dense, {DType::f32, DType::f16, DType::bf16});
  expect_rows_contiguous(op, "dense", dense);
  FK_CHECK(dense.strides[0] >= 0, op, ": dense must have a non-negative row stride, got ", describe(dense));
  const int64_t batch = dense.shape[0], dim = dense.shape[1];
  FK_CHECK(dim >= 1 && dim <= INT_MAX, op, ": dense rows must hold 1 to 2^31-1 elements, got ", describe(dense));

  expect_rank(op, "sparse", sparse, 3);
  expect_device(op, "sparse", sparse, backend);
  expect_dtype(op, "sparse", sparse, dense.dtype);
  FK_CHECK(sparse.shape[0] == batch && sparse.shape[2] == dim, op, ": sparse must be [", batch, ", F, ", dim,
           "] (dense's samples and width), got ", describe(sparse));
  const int64_t features = sparse.shape[1];
  FK_CHECK(features <= 4096, op, ": at most 4096 sparse features, got ", describe(sparse));
  FK_CHECK(sparse.strides[2] == 1 || dim == 1, op, ": sparse [B, F, D] must have a contiguous last dimension, got ",
           describe(sparse), " with strides ", shape_to_string(sparse.strides, sparse.rank));
  FK_CHECK(sparse.strides[0] >= 0 && sparse.strides[1] >= 0, op, ": sparse strides must be non-negative, got ",
           shape_to_string(sparse.strides, sparse.rank), " for ", describe(sparse));
  FK_CHECK(features <= 1 || sparse.strides[1] >= dim, op, ": sparse feature rows must not overlap (feature stride ",
           sparse.strides[1], " < ", dim, ")");

  expect_rank(op, "out", out, 2);
  expect_device(op, "out", out, backend);
  const int64_t width = dlrm_interaction_width(dim, features);
  FK_CHECK(out.shape[0] == batch && out.shape[1] == width, op, ": out must be [", batch, ", ", width,
           "] (D + (F + 1) F / 2 for D = ", dim, ", F = ", features, "), got ", describe(out));
  expect_rows_contiguous(op, "out", out);
  FK_CHECK(out.shape[0] <= 1 || out.strides[0] >= width, op, ": out rows must not overlap, got row stride ",
           out.strides[0]);
  expect_written_dtype(op, "out", out, dense.dtype, backend);
  expect_no_overlap(op, "out", out, "dense", dense);
  expect_no_overlap(op, "out", out, "sparse", sparse);
}

}  // namespace fk::ops
