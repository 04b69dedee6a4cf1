// Checks of packed weight and workspace tensors, for the layer ops whose arguments are
// many such tensors (encoder_layer, the FLUX blocks): a named [rows, cols] matrix or [n]
// vector of the model dtype, contiguous.
#pragma once
#include "ops/common/validate.h"

namespace fk::ops {

inline void expect_packed_matrix(const char* op, const char* arg, const TensorView& v, int64_t rows, int64_t cols,
                                 DType dt) {
  FK_CHECK(v.rank == 2 && v.shape[0] == rows && v.shape[1] == cols, op, ": ", arg, " must be [", rows, ", ", cols,
           "], got ", describe(v));
  expect_dtype(op, arg, v, dt);
  expect_contiguous(op, arg, v);
}

inline void expect_packed_vector(const char* op, const char* arg, const TensorView& v, int64_t n, DType dt) {
  FK_CHECK(v.rank == 1 && v.shape[0] == n, op, ": ", arg, " must be [", n, "], got ", describe(v));
  expect_dtype(op, arg, v, dt);
  expect_contiguous(op, arg, v);
}

}  // namespace fk::ops
