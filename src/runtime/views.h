// Views into the engine's persistent buffers (no copies): the first rows of a buffer, a
// column range of a row-major matrix, a [T, H*D] matrix seen as [T, H, D] heads.
#pragma once
#include <cstdint>

#include "fk/status.h"
#include "fk/tensor.h"
#include "fk/tensor_view.h"

namespace fk::engine {

// v[0:n] along dim 0 (any rank).
inline TensorView first_rows(TensorView v, int64_t n) {
  FK_CHECK(n >= 0 && n <= v.shape[0], "first_rows: ", n, " rows of a view with ", v.shape[0]);
  v.shape[0] = n;
  return v;
}

// v[begin:begin + n] along dim 0 (any rank).
inline TensorView row_range(TensorView v, int64_t begin, int64_t n) {
  FK_CHECK(begin >= 0 && n >= 0 && begin + n <= v.shape[0], "row_range: [", begin, ", ", begin + n,
           ") of a view with ", v.shape[0]);
  v.data = v.element_ptr(begin * v.strides[0]);
  v.shape[0] = n;
  return v;
}

// Columns [begin, begin + n) of a 2-D view with a contiguous last dimension.
inline TensorView columns(TensorView v, int64_t begin, int64_t n) {
  FK_CHECK(v.rank == 2 && begin >= 0 && begin + n <= v.shape[1], "columns: [", begin, ", ", begin + n,
           ") of a view with ", v.shape[1]);
  v.data = v.element_ptr(begin * v.strides[1]);
  v.shape[1] = n;
  return v;
}

// A [T, H*D] matrix (contiguous last dim, free row stride) as [T, H, D].
inline TensorView as_heads(const TensorView& v, int64_t heads, int64_t head_dim) {
  FK_CHECK(v.rank == 2 && v.shape[1] == heads * head_dim && v.strides[1] == 1, "as_heads: ", v.shape[1],
           " columns are not ", heads, " heads of ", head_dim);
  TensorView h = v;
  h.rank = 3;
  h.shape[1] = heads;
  h.shape[2] = head_dim;
  h.strides[0] = v.strides[0];
  h.strides[1] = head_dim;
  h.strides[2] = 1;
  return h;
}

// Element i of dim 0 of a contiguous-in-dim-0 view, with the remaining dims.
inline TensorView index0(const TensorView& v, int64_t i) {
  FK_CHECK(v.rank >= 2 && i >= 0 && i < v.shape[0], "index0: ", i, " of ", v.shape[0]);
  TensorView r{};
  r.data = v.element_ptr(i * v.strides[0]);
  r.rank = v.rank - 1;
  r.dtype = v.dtype;
  r.device = v.device;
  for (int d = 1; d < v.rank; ++d) {
    r.shape[d - 1] = v.shape[d];
    r.strides[d - 1] = v.strides[d];
  }
  return r;
}

// The first rows * cols elements of a contiguous buffer as a packed [rows, cols] matrix:
// one scratch buffer serving matrices of different widths (the dense MLP's and a shared
// expert's intermediate activations), each with packed rows.
inline TensorView packed_rows(const TensorView& buffer, int64_t rows, int64_t cols) {
  FK_CHECK(buffer.is_contiguous() && rows >= 0 && cols >= 0 && rows * cols <= buffer.numel(), "packed_rows: [", rows,
           ", ", cols, "] does not fit a contiguous buffer of ", buffer.numel(), " elements");
  TensorView v{};
  v.data = buffer.data;
  v.rank = 2;
  v.dtype = buffer.dtype;
  v.device = buffer.device;
  v.shape[0] = rows;
  v.shape[1] = cols;
  v.strides[0] = cols;
  v.strides[1] = 1;
  return v;
}

// "No tensor" for optional op arguments.
inline TensorView absent() { return TensorView{}; }
// A weight the model may not have, as an optional op argument.
inline TensorView opt(const Tensor& t) { return t.defined() ? t.view() : absent(); }

}  // namespace fk::engine
