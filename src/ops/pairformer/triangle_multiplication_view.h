// Packed-view helpers of the triangle multiplication and transition ops: argument checks of
// a packed tensor of any rank, and 2-D views of packed tensors (rows of the pair).
#pragma once
#include <initializer_list>

#include "fk/op.h"
#include "ops/common/validate.h"

namespace fk::ops {

// v must be exactly `dims`, packed, of dtype dt; the message names the expected shape.
inline void expect_packed_shape(const char* op, const char* arg, const TensorView& v, std::initializer_list<int64_t> dims,
                                DType dt) {
  bool ok = v.rank == static_cast<int32_t>(dims.size());
  int i = 0;
  for (int64_t d : dims) ok = ok && v.shape[i++] == d;
  if (!ok) {
    std::string want;
    for (int64_t d : dims) want += (want.empty() ? "" : ", ") + std::to_string(d);
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, op, ": ", arg, " must be [", want, "], got ", describe(v));
  }
  expect_dtype(op, arg, v, dt);
  expect_contiguous(op, arg, v);
}

// A packed tensor's elements as a packed [rows, cols] matrix.
inline TensorView packed_matrix(const TensorView& v, int64_t rows, int64_t cols) {
  TensorView m = v;
  m.rank = 2;
  m.shape[0] = rows, m.shape[1] = cols;
  m.strides[0] = cols, m.strides[1] = 1;
  return m;
}

}  // namespace fk::ops
