// Argument validation shared by every implementation of every op. Errors name the op,
// the argument and what was expected, e.g.
//   rms_norm: out must be bf16[16, 4096] (like input), got f16[16, 4096] on cuda:0
#pragma once
#include <initializer_list>

#include "fk/status.h"
#include "fk/tensor.h"

namespace fk::ops {

// Optional tensor arguments are absent when they have no data or no elements.
inline bool arg_present(const TensorView& v) { return v.data != nullptr && v.numel() > 0; }

inline void expect_rank(const char* op, const char* arg, const TensorView& v, int rank) {
  FK_CHECK(v.rank == rank, op, ": ", arg, " must have rank ", rank, ", got ", describe(v));
}
inline void expect_dtype(const char* op, const char* arg, const TensorView& v, DType t) {
  FK_CHECK(v.dtype == t, op, ": ", arg, " must be ", dtype_name(t), ", got ", describe(v));
}
inline void expect_dtype_in(const char* op, const char* arg, const TensorView& v, std::initializer_list<DType> ts) {
  for (DType t : ts)
    if (v.dtype == t) return;
  std::string names;
  for (DType t : ts) names += std::string(names.empty() ? "" : "/") + std::string(dtype_name(t));
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, op, ": ", arg, " must be one of ", names, ", got ", describe(v));
}
inline void expect_contiguous(const char* op, const char* arg, const TensorView& v) {
  FK_CHECK(v.is_contiguous(), op, ": ", arg, " must be contiguous, got ", describe(v));
}
inline void expect_same_shape(const char* op, const char* arg, const TensorView& v, const char* like,
                              const TensorView& ref) {
  bool same = v.rank == ref.rank;
  for (int i = 0; same && i < v.rank; ++i) same = v.shape[i] == ref.shape[i];
  FK_CHECK(same, op, ": ", arg, " must have the shape of ", like, " ", shape_to_string(ref.shape, ref.rank),
           ", got ", describe(v));
}
inline void expect_dim(const char* op, const char* arg, const TensorView& v, int dim, int64_t size) {
  FK_CHECK(v.rank > dim && v.shape[dim] == size, op, ": ", arg, " dimension ", dim, " must be ", size, ", got ",
           describe(v));
}
inline void expect_device(const char* op, const char* arg, const TensorView& v, DeviceType d) {
  FK_CHECK(v.device.type == d, op, ": ", arg, " must be on ", d == DeviceType::cpu ? "cpu" : "cuda", ", got ",
           describe(v));
}
// Last dimension contiguous, other strides free (rows of a packed or sliced matrix).
inline void expect_rows_contiguous(const char* op, const char* arg, const TensorView& v) {
  FK_CHECK(v.rank >= 1 && (v.strides[v.rank - 1] == 1 || v.shape[v.rank - 1] == 1), op, ": ", arg,
           " must have a contiguous last dimension, got ", describe(v));
}

}  // namespace fk::ops

namespace fk::ops {

// A tensor an implementation writes has the model dtype; the CPU implementation, which is
// also the oracle, may instead be handed f64 (the oracle's copies of out/inout tensors).
inline void expect_written_dtype(const char* op, const char* arg, const TensorView& v, DType model,
                                 DeviceType backend) {
  if (backend == DeviceType::cpu && v.dtype == DType::f64) return;
  expect_dtype(op, arg, v, model);
}

// Two tensors of one call whose bytes must not overlap (an output and another argument).
inline void expect_no_overlap(const char* op, const char* arg, const TensorView& a, const char* other,
                              const TensorView& b) {
  if (a.data == nullptr || b.data == nullptr || a.span_bytes() == 0 || b.span_bytes() == 0) return;
  const auto* a0 = static_cast<const char*>(a.data);
  const auto* b0 = static_cast<const char*>(b.data);
  FK_CHECK(a0 + a.span_bytes() <= b0 || b0 + b.span_bytes() <= a0, op, ": ", arg, " must not overlap ", other);
}

}  // namespace fk::ops
