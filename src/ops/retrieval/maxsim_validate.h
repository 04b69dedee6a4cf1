// Argument checks of maxsim, shared by its CPU reference and CUDA baseline. `backend` is
// where the implementation runs: every tensor must live there, and the CPU implementation,
// which is also the oracle, accepts f64 scores. The offsets are checked entry by entry only
// where they can be read (CPU tensors): the CUDA baseline does not synchronise to read
// device metadata (fk/ops/maxsim.h).
#pragma once
#include <cstdint>

#include "fk/ops/maxsim.h"
#include "ops/common/validate.h"

namespace fk::ops {

// query / doc: [tokens, D] rows with a contiguous last dimension and a free (non-negative)
// row stride.
inline void expect_maxsim_rows(const char* arg, const TensorView& v, DeviceType backend) {
  constexpr const char* op = MaxSimArgs::kName;
  expect_device(op, arg, v, backend);
  expect_rank(op, arg, v, 2);
  expect_rows_contiguous(op, arg, v);
  FK_CHECK(v.strides[0] >= 0, op, ": ", arg, " must have a non-negative row stride, got ", describe(v));
}

// cu_seqlens_{q,d}: i32 [count + 1] from 0 to `total` rows, non-decreasing, no length above
// `max_len`; `what` names an entry ("query", "document") in the errors. Entries are read
// only on the host.
inline void expect_maxsim_offsets(const char* arg, const char* what, const TensorView& cu, int64_t total,
                                  int32_t max_len, const char* max_name, DeviceType backend) {
  constexpr const char* op = MaxSimArgs::kName;
  FK_CHECK(cu.data != nullptr && cu.rank == 1 && cu.shape[0] >= 1, op, ": ", arg, " must be i32[count + 1] (one ",
           "offset per ", what, ", and the end), got ", describe(cu));
  expect_dtype(op, arg, cu, DType::i32);
  expect_contiguous(op, arg, cu);
  expect_device(op, arg, cu, backend);
  if (!cu.device.is_cpu()) return;
  const auto* c = static_cast<const int32_t*>(cu.data);
  const int64_t count = cu.shape[0] - 1;
  FK_CHECK(c[0] == 0, op, ": ", arg, "[0] must be 0, got ", c[0]);
  for (int64_t i = 0; i < count; ++i) {
    FK_CHECK(c[i + 1] >= c[i], op, ": ", arg, " must not decrease: entry ", i + 1, " is ", c[i + 1], " after ", c[i]);
    FK_CHECK(c[i + 1] - c[i] <= max_len, op, ": ", what, " ", i, " has ", c[i + 1] - c[i], " rows by ", arg,
             ", more than ", max_name, " = ", max_len);
  }
  FK_CHECK(c[count] == total, op, ": ", arg, " must end at the ", total, " packed ", what, " rows, got ", c[count]);
}

inline void validate_maxsim(const MaxSimArgs& a, DeviceType backend) {
  constexpr const char* op = MaxSimArgs::kName;
  expect_maxsim_rows("query", a.query, backend);
  expect_maxsim_rows("doc", a.doc, backend);
  expect_dtype_in(op, "query", a.query, {DType::f32, DType::f16, DType::bf16});
  expect_dtype(op, "doc", a.doc, a.query.dtype);
  const int64_t dim = a.query.shape[1];
  FK_CHECK(dim > 0, op, ": query must have a positive embedding width D, got ", describe(a.query));
  FK_CHECK(a.doc.shape[1] == dim, op, ": doc must have query's embedding width ", dim, ", got ", describe(a.doc));
  FK_CHECK(a.max_seqlen_q >= 0 && a.max_seqlen_d >= 0, op, ": max_seqlen_q and max_seqlen_d must not be negative, got ",
           a.max_seqlen_q, " and ", a.max_seqlen_d);
  expect_maxsim_offsets("cu_seqlens_q", "query", a.cu_seqlens_q, a.query.shape[0], a.max_seqlen_q, "max_seqlen_q",
                        backend);
  expect_maxsim_offsets("cu_seqlens_d", "document", a.cu_seqlens_d, a.doc.shape[0], a.max_seqlen_d, "max_seqlen_d",
                        backend);
  const int64_t bq = a.cu_seqlens_q.shape[0] - 1, bd = a.cu_seqlens_d.shape[0] - 1;
  expect_device(op, "scores", a.scores, backend);
  FK_CHECK(a.scores.rank == 2 && a.scores.shape[0] == bq && a.scores.shape[1] == bd, op,
           ": scores must be [Bq, Bd] = [", bq, ", ", bd, "] (one score per query and document), got ",
           describe(a.scores));
  expect_written_dtype(op, "scores", a.scores, DType::f32, backend);
  expect_contiguous(op, "scores", a.scores);
  expect_no_overlap(op, "scores", a.scores, "query", a.query);
  expect_no_overlap(op, "scores", a.scores, "doc", a.doc);
  expect_no_overlap(op, "scores", a.scores, "cu_seqlens_q", a.cu_seqlens_q);
  expect_no_overlap(op, "scores", a.scores, "cu_seqlens_d", a.cu_seqlens_d);
}

}  // namespace fk::ops
