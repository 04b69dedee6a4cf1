// Views of an op's matrices without copies, for the layer ops that hand slices of their
// inputs and workspaces to their parts: a block of rows and columns, a range of the last
// dimension, the heads of a [T, heads * size] matrix, and per-head rows.
#pragma once
#include <cstdint>

#include "fk/tensor_view.h"

namespace fk::ops::views {

// Rows [first, first + n) and columns [c0, c0 + nc) of a 2-D view (its strides kept).
inline TensorView block(const TensorView& m, int64_t first, int64_t n, int64_t c0, int64_t nc) {
  TensorView v = m;
  v.data = m.element_ptr(first * m.strides[0] + c0 * m.strides[1]);
  v.shape[0] = n, v.shape[1] = nc;
  return v;
}

// Elements [c0, c0 + n) of the last dimension of a view of any rank (an NHWC tensor's
// channels; its strides kept).
inline TensorView last_dim(const TensorView& v, int64_t c0, int64_t n) {
  TensorView s = v;
  s.data = v.element_ptr(c0 * v.strides[v.rank - 1]);
  s.shape[v.rank - 1] = n;
  return s;
}

// Columns [c0, c0 + nc) of every row.
inline TensorView columns(const TensorView& m, int64_t c0, int64_t nc) { return block(m, 0, m.shape[0], c0, nc); }

// A [T, heads * size] view with a contiguous last dimension as [T, heads, size] (the row
// stride kept).
inline TensorView heads(const TensorView& m, int64_t heads, int64_t size) {
  TensorView v = m;
  v.rank = 3;
  v.shape[1] = heads, v.shape[2] = size;
  v.strides[1] = size, v.strides[2] = 1;
  return v;
}

// A contiguous [T, heads * size] matrix as [T * heads, size]: one row per head.
inline TensorView head_rows(TensorView m, int64_t heads, int64_t size) {
  m.shape[0] *= heads, m.shape[1] = size;
  m.strides[0] = size, m.strides[1] = 1;
  return m;
}

}  // namespace fk::ops::views
