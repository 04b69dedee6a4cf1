// Argument checks of embedding_bag, shared by its CPU reference and CUDA baseline. `backend`
// is where the implementation runs: every tensor must live there, and the CPU implementation,
// which is also the oracle, accepts an f64 out. The offsets are checked entry by entry only
// where they can be read (CPU tensors): the CUDA baseline does not synchronise to read device
// metadata (fk/ops/recsys.h says what it does with bad metadata instead).
#pragma once
#include <climits>
#include <cstdint>

#include "fk/element.h"
#include "fk/ops/recsys.h"
#include "ops/common/validate.h"

namespace fk::ops {

// offsets (host): offsets[0] >= 0, non-decreasing, offsets[B] <= N.
inline void expect_bag_offsets(const TensorView& offsets, int64_t num_indices) {
  constexpr const char* op = EmbeddingBagArgs::kName;
  const int64_t bags = offsets.shape[0] - 1;
  const int64_t first = get_index(offsets, 0);
  FK_CHECK(first >= 0 && first <= num_indices, op, ": offsets[0] = ", first, " must lie in [0, ", num_indices,
           "] (the ", num_indices, " indices)");
  int64_t prev = first;
  for (int64_t b = 1; b <= bags; ++b) {
    const int64_t o = get_index(offsets, b);
    FK_CHECK(o >= prev, op, ": offsets must not decrease: offsets[", b, "] = ", o, " after ", prev, " (bag ", b - 1,
             " would end before it starts)");
    prev = o;
  }
  FK_CHECK(prev <= num_indices, op, ": offsets[", bags, "] = ", prev, " is past the ", num_indices, " indices");
}

inline void validate_embedding_bag(const EmbeddingBagArgs& a, DeviceType backend) {
  constexpr const char* op = EmbeddingBagArgs::kName;
  expect_rank(op, "table", a.table, 2);
  expect_device(op, "table", a.table, backend);
  expect_dtype_in(op, "table", a.table, {DType::f32, DType::f16, DType::bf16});
  expect_rows_contiguous(op, "table", a.table);
  FK_CHECK(a.table.strides[0] >= 0, op, ": table must have a non-negative row stride, got ", describe(a.table));
  FK_CHECK(a.table.shape[1] >= 1 && a.table.shape[1] <= INT_MAX, op,
           ": table rows must hold 1 to 2^31-1 elements, got ", describe(a.table));

  expect_rank(op, "indices", a.indices, 1);
  expect_device(op, "indices", a.indices, backend);
  expect_dtype_in(op, "indices", a.indices, {DType::i32, DType::i64});
  expect_contiguous(op, "indices", a.indices);

  FK_CHECK(a.offsets.rank == 1 && a.offsets.shape[0] >= 1, op,
           ": offsets must be [B + 1] (each bag's start, then the last bag's end), got ", describe(a.offsets));
  expect_device(op, "offsets", a.offsets, backend);
  expect_dtype(op, "offsets", a.offsets, a.indices.dtype);
  expect_contiguous(op, "offsets", a.offsets);
  const int64_t bags = a.offsets.shape[0] - 1, num_indices = a.indices.shape[0];

  FK_CHECK(a.mode == EmbeddingBagMode::sum || a.mode == EmbeddingBagMode::mean, op,
           ": mode must be sum (0) or mean (1), got ", static_cast<int>(a.mode),
           " (max pooling, PyTorch's mode 2, is not supported)");
  if (arg_present(a.per_sample_weights)) {
    FK_CHECK(a.mode == EmbeddingBagMode::sum, op,
             ": per_sample_weights need mode sum (PyTorch's rule: a weighted mean is not defined)");
    expect_rank(op, "per_sample_weights", a.per_sample_weights, 1);
    expect_device(op, "per_sample_weights", a.per_sample_weights, backend);
    expect_dtype(op, "per_sample_weights", a.per_sample_weights, a.table.dtype);
    expect_contiguous(op, "per_sample_weights", a.per_sample_weights);
    FK_CHECK(a.per_sample_weights.shape[0] == num_indices, op, ": per_sample_weights must have one weight per index (",
             num_indices, "), got ", describe(a.per_sample_weights));
  }

  expect_rank(op, "out", a.out, 2);
  expect_device(op, "out", a.out, backend);
  FK_CHECK(a.out.shape[0] == bags && a.out.shape[1] == a.table.shape[1], op, ": out must be [", bags, ", ",
           a.table.shape[1], "] (bags x embedding width), got ", describe(a.out));
  expect_rows_contiguous(op, "out", a.out);
  FK_CHECK(a.out.shape[0] <= 1 || a.out.strides[0] >= a.out.shape[1], op,
           ": out rows must not overlap, got row stride ", a.out.strides[0]);
  expect_written_dtype(op, "out", a.out, a.table.dtype, backend);
  expect_no_overlap(op, "out", a.out, "table", a.table);
  expect_no_overlap(op, "out", a.out, "indices", a.indices);
  expect_no_overlap(op, "out", a.out, "offsets", a.offsets);
  expect_no_overlap(op, "out", a.out, "per_sample_weights", a.per_sample_weights);

  if (a.offsets.device.is_cpu()) expect_bag_offsets(a.offsets, num_indices);
}

}  // namespace fk::ops
