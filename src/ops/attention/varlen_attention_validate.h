// Argument checks of varlen_attention, shared by its CPU reference and CUDA baseline.
// `backend` is where the implementation runs: every tensor must live there, and the CPU
// implementation, which is also the oracle, accepts f64 for `out`. The sequence offsets are
// checked entry by entry only where they can be read (CPU tensors): the CUDA baseline does
// not synchronise to read device metadata (fk/ops/varlen_attention.h).
#pragma once
#include <cstdint>

#include "fk/ops/varlen_attention.h"
#include "ops/common/validate.h"

namespace fk::ops {

inline void expect_varlen_tokens(const char* op, const char* arg, const TensorView& v, DeviceType backend) {
  expect_device(op, arg, v, backend);
  expect_rank(op, arg, v, 3);
  expect_rows_contiguous(op, arg, v);
  FK_CHECK(v.strides[0] >= 0 && v.strides[1] >= 0, op, ": ", arg, " must have non-negative strides, got ",
           describe(v));
}

// cu_seqlens_{q,k}: [B + 1] i32 from 0 to `total`, non-decreasing, no length above
// `max_len`. Entries are read only on the host.
inline void expect_cu_seqlens(const char* op, const char* arg, const TensorView& cu, int64_t batch, int64_t total,
                              int32_t max_len, const char* max_name) {
  FK_CHECK(cu.data != nullptr && cu.rank == 1 && cu.shape[0] == batch + 1, op, ": ", arg, " must be i32[", batch + 1,
           "] (one offset per sequence, and the end), got ", describe(cu));
  expect_dtype(op, arg, cu, DType::i32);
  expect_contiguous(op, arg, cu);
  if (!cu.device.is_cpu()) return;
  const auto* c = static_cast<const int32_t*>(cu.data);
  FK_CHECK(c[0] == 0, op, ": ", arg, "[0] must be 0, got ", c[0]);
  for (int64_t b = 0; b < batch; ++b) {
    FK_CHECK(c[b + 1] >= c[b], op, ": ", arg, " must not decrease: entry ", b + 1, " is ", c[b + 1], " after ", c[b]);
    FK_CHECK(c[b + 1] - c[b] <= max_len, op, ": sequence ", b, " has ", c[b + 1] - c[b], " tokens by ", arg,
             ", more than ", max_name, " = ", max_len);
  }
  FK_CHECK(c[batch] == total, op, ": ", arg, " must end at the ", total, " packed tokens, got ", c[batch]);
}

// seqused_k: [B] i32, each entry in [0, Lk[b]] (read only on the host).
inline void expect_seqused_k(const char* op, const TensorView& used, const TensorView& cu_k, int64_t batch,
                             DeviceType backend) {
  FK_CHECK(used.rank == 1 && used.shape[0] == batch, op, ": seqused_k must be i32[", batch,
           "] (one key count per sequence), got ", describe(used));
  expect_dtype(op, "seqused_k", used, DType::i32);
  expect_contiguous(op, "seqused_k", used);
  expect_device(op, "seqused_k", used, backend);
  if (!used.device.is_cpu() || !cu_k.device.is_cpu()) return;
  const auto* u = static_cast<const int32_t*>(used.data);
  const auto* c = static_cast<const int32_t*>(cu_k.data);
  for (int64_t b = 0; b < batch; ++b)
    FK_CHECK(u[b] >= 0 && u[b] <= c[b + 1] - c[b], op, ": seqused_k[", b, "] = ", u[b], " is outside [0, ",
             c[b + 1] - c[b], "], the keys of sequence ", b);
}

inline void validate_varlen_attention(const VarlenAttentionArgs& a, DeviceType backend) {
  constexpr const char* op = VarlenAttentionArgs::kName;
  expect_varlen_tokens(op, "q", a.q, backend);
  expect_varlen_tokens(op, "k", a.k, backend);
  expect_varlen_tokens(op, "v", a.v, backend);
  expect_varlen_tokens(op, "out", a.out, backend);
  expect_dtype_in(op, "q", a.q, {DType::bf16, DType::f16});
  expect_dtype(op, "k", a.k, a.q.dtype);
  expect_dtype(op, "v", a.v, a.q.dtype);
  expect_written_dtype(op, "out", a.out, a.q.dtype, backend);
  expect_same_shape(op, "out", a.out, "q", a.q);
  expect_same_shape(op, "v", a.v, "k", a.k);
  const int64_t hq = a.q.shape[1], hk = a.k.shape[1], d = a.q.shape[2];
  FK_CHECK(d > 0 && a.k.shape[2] == d, op, ": k must have q's head dim ", d, ", got ", describe(a.k));
  FK_CHECK(hk > 0 && hq % hk == 0, op, ": the query heads (", hq, ") must be a multiple of the key/value heads (",
           hk, ")");
  FK_CHECK(a.max_seqlen_q >= 0 && a.max_seqlen_k >= 0, op, ": max_seqlen_q and max_seqlen_k must not be negative, got ",
           a.max_seqlen_q, " and ", a.max_seqlen_k);
  FK_CHECK(a.causal == 0 || a.causal == 1, op, ": causal must be 0 or 1, got ", a.causal);
  FK_CHECK(a.sm_scale == a.sm_scale, op, ": sm_scale is NaN");
  const int64_t batch = a.cu_seqlens_q.rank == 1 ? a.cu_seqlens_q.shape[0] - 1 : -1;
  FK_CHECK(batch >= 0, op, ": cu_seqlens_q must be i32[B + 1], got ", describe(a.cu_seqlens_q));
  expect_device(op, "cu_seqlens_q", a.cu_seqlens_q, backend);
  expect_device(op, "cu_seqlens_k", a.cu_seqlens_k, backend);
  expect_cu_seqlens(op, "cu_seqlens_q", a.cu_seqlens_q, batch, a.q.shape[0], a.max_seqlen_q, "max_seqlen_q");
  expect_cu_seqlens(op, "cu_seqlens_k", a.cu_seqlens_k, batch, a.k.shape[0], a.max_seqlen_k, "max_seqlen_k");
  if (a.seqused_k.data != nullptr) expect_seqused_k(op, a.seqused_k, a.cu_seqlens_k, batch, backend);
  expect_no_overlap(op, "out", a.out, "q", a.q);
  expect_no_overlap(op, "out", a.out, "k", a.k);
  expect_no_overlap(op, "out", a.out, "v", a.v);
}

}  // namespace fk::ops
