// Argument checks of pair_bias_attention (fk/ops/pairformer.h), shared by its CPU
// reference and CUDA baseline. `backend` is where the implementation runs: every tensor
// must live there; the CPU implementation (also the oracle) accepts an f64 `out`.
#pragma once
#include <cmath>
#include <cstdint>

#include "fk/ops/pairformer.h"
#include "ops/common/validate.h"

namespace fk::ops {

struct PairBiasAttentionDims {
  int64_t rows = 0, seq = 0, heads = 0, head_dim = 0, groups = 0;
  bool masked = false;
};

inline PairBiasAttentionDims validate_pair_bias_attention(const PairBiasAttentionArgs& a, DeviceType backend) {
  constexpr const char* op = PairBiasAttentionArgs::kName;
  expect_rank(op, "q", a.q, 4);
  expect_dtype_in(op, "q", a.q, {DType::f32, DType::f16, DType::bf16});
  PairBiasAttentionDims d;
  d.rows = a.q.shape[0], d.seq = a.q.shape[1], d.heads = a.q.shape[2], d.head_dim = a.q.shape[3];
  FK_CHECK(d.heads > 0 && d.head_dim > 0, op, ": q must be [R, S, Hh, D] with Hh and D positive, got ",
           describe(a.q));
  const DType dt = a.q.dtype;
  for (const auto& [name, t] : {std::pair<const char*, const TensorView*>{"k", &a.k}, {"v", &a.v}}) {
    expect_same_shape(op, name, *t, "q", a.q);
    expect_dtype(op, name, *t, dt);
  }
  expect_same_shape(op, "out", a.out, "q", a.q);
  expect_written_dtype(op, "out", a.out, dt, backend);
  FK_CHECK(a.bias.rank == 4 && a.bias.shape[1] == d.heads && a.bias.shape[2] == d.seq && a.bias.shape[3] == d.seq,
           op, ": bias must be [G, ", d.heads, ", ", d.seq, ", ", d.seq, "] (groups, q's heads, S, S), got ",
           describe(a.bias));
  expect_dtype(op, "bias", a.bias, dt);
  d.groups = a.bias.shape[0];
  FK_CHECK(d.groups > 0 ? d.rows % d.groups == 0 : d.rows == 0, op, ": the bias's ", d.groups,
           " groups must divide q's ", d.rows, " rows (row r uses group r / (R / G))");
  d.masked = arg_present(a.mask);
  if (d.masked) {
    FK_CHECK(a.mask.rank == 2 && a.mask.shape[0] == d.rows && a.mask.shape[1] == d.seq, op, ": mask must be [",
             d.rows, ", ", d.seq, "] (q's rows and keys), got ", describe(a.mask));
    expect_dtype(op, "mask", a.mask, dt);
  }
  FK_CHECK(std::isfinite(a.scale) && a.scale > 0, op, ": scale must be finite and positive, got ", a.scale);
  for (const auto& [name, t] : {std::pair<const char*, const TensorView*>{"out", &a.out}, {"q", &a.q}, {"k", &a.k},
                                {"v", &a.v}, {"bias", &a.bias}}) {
    expect_contiguous(op, name, *t);
    expect_device(op, name, *t, backend);
  }
  if (d.masked) {
    expect_contiguous(op, "mask", a.mask);
    expect_device(op, "mask", a.mask, backend);
  }
  for (const auto& [name, t] : {std::pair<const char*, const TensorView*>{"q", &a.q}, {"k", &a.k}, {"v", &a.v},
                                {"bias", &a.bias}, {"mask", &a.mask}})
    expect_no_overlap(op, "out", a.out, name, *t);
  return d;
}

}  // namespace fk::ops
