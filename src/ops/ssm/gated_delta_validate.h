// Argument checks of the gated delta rule ops (chunk_gated_delta_rule and
// fused_recurrent_gated_delta_rule), shared by their CPU reference and CUDA baselines.
// `backend` is where the implementation runs: every tensor must live there, and the CPU
// implementation, which is also the oracle, accepts f64 for o and state (the oracle's
// copies of written tensors). The values of cu_seqlens, state_indices and
// has_initial_state are checked where they can be read without a device round trip: on
// the CPU backend (the CUDA kernels skip a sequence whose slot lies outside the pool).
#pragma once
#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/ops/gated_delta.h"
#include "ops/common/validate.h"

namespace fk::ops {

// Sizes of one call, read off the shapes.
struct GatedDeltaDims {
  int64_t tokens = 0, seqs = 0, slots = 0;
  int64_t hk = 0, hv = 0, dk = 0, dv = 0;
};

inline GatedDeltaDims validate_gated_delta_rule(const char* op, const GatedDeltaRuleArgs& a, DeviceType backend) {
  expect_rank(op, "q", a.q, 3);
  expect_rank(op, "k", a.k, 3);
  expect_rank(op, "v", a.v, 3);
  GatedDeltaDims d;
  d.tokens = a.q.shape[0], d.hk = a.q.shape[1], d.dk = a.q.shape[2];
  d.hv = a.v.shape[1], d.dv = a.v.shape[2];
  expect_dtype_in(op, "q", a.q, {DType::bf16, DType::f16, DType::f32});
  expect_same_shape(op, "k", a.k, "q", a.q);
  expect_dtype(op, "k", a.k, a.q.dtype);
  expect_dim(op, "v", a.v, 0, d.tokens);
  expect_dtype(op, "v", a.v, a.q.dtype);
  FK_CHECK(d.hk >= 1 && d.dk >= 1 && d.dv >= 1 && d.hv >= 1, op, ": head counts and sizes must be >= 1, got q ",
           describe(a.q), " and v ", describe(a.v));
  FK_CHECK(d.hv % d.hk == 0, op, ": the value heads (", d.hv, ") must be a multiple of the query/key heads (", d.hk,
           "), got q ", describe(a.q), " and v ", describe(a.v));
  // Heads packed within a token; the token stride is free (slices of a packed qkv buffer).
  for (const auto& [name, t] : {std::pair<const char*, const TensorView&>{"q", a.q}, {"k", a.k}, {"v", a.v}})
    FK_CHECK(t.strides[2] == 1 && t.strides[1] == t.shape[2] && t.strides[0] >= t.shape[1] * t.shape[2], op, ": ",
             name, " must have packed heads (strides [>= H*D, D, 1]), got ", describe(t));

  FK_CHECK(a.o.rank == 3 && a.o.shape[0] == d.tokens && a.o.shape[1] == d.hv && a.o.shape[2] == d.dv, op,
           ": o must be [", d.tokens, ", ", d.hv, ", ", d.dv, "] (like v), got ", describe(a.o));
  expect_written_dtype(op, "o", a.o, a.q.dtype, backend);
  expect_contiguous(op, "o", a.o);

  expect_rank(op, "state", a.state, 4);
  d.slots = a.state.shape[0];
  FK_CHECK(a.state.shape[1] == d.hv && a.state.shape[2] == d.dk && a.state.shape[3] == d.dv, op,
           ": state must be [num_slots, ", d.hv, ", ", d.dk, ", ", d.dv, "] (Hv, K, V), got ", describe(a.state));
  expect_written_dtype(op, "state", a.state, DType::f32, backend);
  // Each slot a packed [Hv, K, V]; the slot stride free (a pool whose slots also hold other
  // layers' state), as long as slots do not overlap.
  FK_CHECK(a.state.strides[3] == 1 && a.state.strides[2] == d.dv && a.state.strides[1] == d.dk * d.dv, op,
           ": each state slot must be a packed [Hv, K, V] (strides ", d.dk * d.dv, ", ", d.dv, ", 1), got ",
           describe(a.state));
  FK_CHECK(a.state.shape[0] <= 1 || a.state.strides[0] >= d.hv * d.dk * d.dv, op,
           ": state slots must not overlap (slot stride ", a.state.strides[0], " < ", d.hv * d.dk * d.dv, ")");

  for (const auto& [name, t] : {std::pair<const char*, const TensorView&>{"g", a.g}, {"beta", a.beta}}) {
    FK_CHECK(t.rank == 2 && t.shape[0] == d.tokens && t.shape[1] == d.hv, op, ": ", name, " must be [", d.tokens,
             ", ", d.hv, "] (tokens, value heads), got ", describe(t));
    expect_contiguous(op, name, t);
  }
  expect_dtype(op, "g", a.g, DType::f32);
  FK_CHECK(a.beta.dtype == DType::f32 || a.beta.dtype == a.q.dtype, op, ": beta must be f32 or ",
           dtype_name(a.q.dtype), " (the dtype of q), got ", describe(a.beta));

  expect_rank(op, "cu_seqlens", a.cu_seqlens, 1);
  expect_dtype(op, "cu_seqlens", a.cu_seqlens, DType::i32);
  expect_contiguous(op, "cu_seqlens", a.cu_seqlens);
  FK_CHECK(a.cu_seqlens.shape[0] >= 1, op, ": cu_seqlens must have N+1 >= 1 entries, got ", describe(a.cu_seqlens));
  d.seqs = a.cu_seqlens.shape[0] - 1;
  FK_CHECK(a.state_indices.rank == 1 && a.state_indices.shape[0] == d.seqs, op, ": state_indices must be [", d.seqs,
           "] (one slot per sequence of cu_seqlens), got ", describe(a.state_indices));
  expect_dtype(op, "state_indices", a.state_indices, DType::i32);
  expect_contiguous(op, "state_indices", a.state_indices);
  const bool has_flags = arg_present(a.has_initial_state);
  if (has_flags) {
    FK_CHECK(a.has_initial_state.rank == 1 && a.has_initial_state.shape[0] == d.seqs, op,
             ": has_initial_state must be [", d.seqs, "] (one flag per sequence), got ", describe(a.has_initial_state));
    expect_dtype(op, "has_initial_state", a.has_initial_state, DType::i32);
    expect_contiguous(op, "has_initial_state", a.has_initial_state);
  }
  FK_CHECK(d.seqs == 0 || d.slots >= 1, op, ": state must have at least one slot for ", d.seqs, " sequences, got ",
           describe(a.state));
  FK_CHECK(std::isfinite(a.scale) && a.scale >= 0, op, ": scale must be > 0 (or 0 for 1/sqrt(K)), got ", a.scale);
  FK_CHECK(a.use_qk_l2norm_in_kernel == 0 || a.use_qk_l2norm_in_kernel == 1, op,
           ": use_qk_l2norm_in_kernel must be 0 or 1, got ", a.use_qk_l2norm_in_kernel);

  expect_device(op, "q", a.q, backend);
  expect_device(op, "k", a.k, backend);
  expect_device(op, "v", a.v, backend);
  expect_device(op, "o", a.o, backend);
  expect_device(op, "state", a.state, backend);
  expect_device(op, "g", a.g, backend);
  expect_device(op, "beta", a.beta, backend);
  expect_device(op, "cu_seqlens", a.cu_seqlens, backend);
  expect_device(op, "state_indices", a.state_indices, backend);
  if (has_flags) expect_device(op, "has_initial_state", a.has_initial_state, backend);
  // The state is updated in place while q, k, v, g, beta are read, and o is written.
  for (const auto& [name, t] : {std::pair<const char*, const TensorView&>{"q", a.q}, {"k", a.k}, {"v", a.v},
                                {"g", a.g}, {"beta", a.beta}, {"o", a.o}})
    expect_no_overlap(op, "state", a.state, name, t);
  for (const auto& [name, t] :
       {std::pair<const char*, const TensorView&>{"q", a.q}, {"k", a.k}, {"v", a.v}, {"g", a.g}, {"beta", a.beta}})
    expect_no_overlap(op, "o", a.o, name, t);

  if (backend != DeviceType::cpu) return d;
  // Host index tensors: the values.
  FK_CHECK(get_index(a.cu_seqlens, 0) == 0, op, ": cu_seqlens[0] must be 0, got ", get_index(a.cu_seqlens, 0));
  for (int64_t n = 0; n < d.seqs; ++n) {
    const int64_t b = get_index(a.cu_seqlens, n), e = get_index(a.cu_seqlens, n + 1);
    FK_CHECK(e >= b, op, ": cu_seqlens must not decrease, got cu_seqlens[", n, "] = ", b, " > cu_seqlens[", n + 1,
             "] = ", e);
  }
  FK_CHECK(get_index(a.cu_seqlens, d.seqs) == d.tokens, op, ": cu_seqlens[N] must be the token count ", d.tokens,
           " of q, got ", get_index(a.cu_seqlens, d.seqs));
  std::vector<bool> used(static_cast<size_t>(d.slots), false);
  for (int64_t n = 0; n < d.seqs; ++n) {
    const int64_t s = get_index(a.state_indices, n);
    FK_CHECK(s >= 0 && s < d.slots, op, ": state_indices[", n, "] = ", s, " is outside the state pool of ", d.slots,
             " slots");
    FK_CHECK(!used[static_cast<size_t>(s)], op, ": state_indices[", n, "] = ", s,
             " names a slot another sequence of the call already uses (slots must be distinct)");
    used[static_cast<size_t>(s)] = true;
  }
  return d;
}

}  // namespace fk::ops
