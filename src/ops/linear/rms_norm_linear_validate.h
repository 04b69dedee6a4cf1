// Argument checks of rms_norm_linear, shared by its CPU reference and CUDA baseline.
#pragma once
#include "fk/ops/linear.h"
#include "ops/common/validate.h"
#include "ops/linear/linear_validate.h"

namespace fk::ops {

// `backend` is where the implementation runs; the CPU one (also the oracle) accepts f64
// for the tensors it writes.
inline void validate_rms_norm_linear(const RmsNormLinearArgs& a, DeviceType backend) {
  constexpr const char* op = RmsNormLinearArgs::kName;
  const bool has_residual = arg_present(a.residual_in);
  expect_rank(op, "input", a.input, 2);
  expect_rank(op, "weight", a.weight, 2);
  expect_dtype_in(op, "input", a.input, {DType::bf16, DType::f16});
  const DType model = a.input.dtype;
  const int64_t M = a.input.shape[0], K = a.input.shape[1], N = a.weight.shape[0];
  FK_CHECK(K > 0, op, ": K (input features) must be positive, got input ", describe(a.input));
  expect_dtype(op, "weight", a.weight, model);
  expect_dim(op, "weight", a.weight, 1, K);
  expect_rank(op, "norm_weight", a.norm_weight, 1);
  expect_dtype(op, "norm_weight", a.norm_weight, model);
  expect_dim(op, "norm_weight", a.norm_weight, 0, K);
  expect_contiguous(op, "norm_weight", a.norm_weight);
  FK_CHECK(a.eps > 0, op, ": eps must be positive, got ", a.eps);

  struct Rows {
    const char* name;
    const TensorView* v;
    int64_t cols;
    bool written;
  };
  const Rows rows[] = {{"out", &a.out, N, true},
                       {"normed", &a.normed, K, true},
                       {"residual_out", &a.residual_out, K, true},
                       {"input", &a.input, K, false},
                       {"residual_in", &a.residual_in, K, false}};
  FK_CHECK(has_residual == arg_present(a.residual_out), op,
           ": residual_out is written exactly when residual_in is given (residual_in ",
           has_residual ? "given" : "absent", ", residual_out ", arg_present(a.residual_out) ? "given" : "absent", ")");
  for (const Rows& r : rows) {
    if ((r.v == &a.residual_in || r.v == &a.residual_out) && !has_residual) continue;
    expect_rank(op, r.name, *r.v, 2);
    expect_device(op, r.name, *r.v, backend);
    expect_dim(op, r.name, *r.v, 0, M);
    expect_dim(op, r.name, *r.v, 1, r.cols);
    expect_rows_contiguous(op, r.name, *r.v);
    expect_rows_disjoint(op, r.name, *r.v);
    if (r.written) expect_written_dtype(op, r.name, *r.v, model, backend);
    else expect_dtype(op, r.name, *r.v, model);
  }
  expect_device(op, "weight", a.weight, backend);
  expect_device(op, "norm_weight", a.norm_weight, backend);
  expect_rows_contiguous(op, "weight", a.weight);
  expect_rows_disjoint(op, "weight", a.weight);
  if (arg_present(a.bias)) {
    expect_rank(op, "bias", a.bias, 1);
    expect_dim(op, "bias", a.bias, 0, N);
    expect_contiguous(op, "bias", a.bias);
    expect_dtype(op, "bias", a.bias, model);
    expect_device(op, "bias", a.bias, backend);
  }
  // Written tensors against everything else: every CTA of the CUDA baseline reads input and
  // residual_in while one of them writes normed and residual_out.
  const std::pair<const char*, const TensorView*> all[] = {
      {"out", &a.out},       {"normed", &a.normed},           {"residual_out", &a.residual_out},
      {"input", &a.input},   {"residual_in", &a.residual_in}, {"norm_weight", &a.norm_weight},
      {"weight", &a.weight}, {"bias", &a.bias}};
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = i + 1; j < std::size(all); ++j)
      expect_no_overlap(op, all[i].first, *all[i].second, all[j].first, *all[j].second);
}

}  // namespace fk::ops
