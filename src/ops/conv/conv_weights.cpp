#include "ops/conv/conv_weights.h"

#include <cmath>
#include <utility>
#include <vector>

#include "fk/element.h"
#include "fk/status.h"
#include "fk/tensor.h"
#include "ops/common/validate.h"

namespace fk::ops {
namespace {

constexpr const char* kOihw = "conv_weight_from_oihw";
constexpr const char* kFold = "fold_batch_norm";

void expect_host_float(const char* fn, const char* arg, const TensorView& v) {
  expect_device(fn, arg, v, DeviceType::cpu);
  expect_dtype_in(fn, arg, v, {DType::f64, DType::f32, DType::f16, DType::bf16});
}

void expect_per_channel(const char* fn, const char* arg, const TensorView& v, int64_t K) {
  expect_host_float(fn, arg, v);
  expect_rank(fn, arg, v, 1);
  expect_dim(fn, arg, v, 0, K);
}

// Element i of a rank-1 view (strided).
double at1(const TensorView& v, int64_t i) { return get(v, i); }

}  // namespace

void conv_weight_from_oihw(const TensorView& oihw, const TensorView& out) {
  expect_host_float(kOihw, "oihw", oihw);
  expect_host_float(kOihw, "out", out);
  expect_rank(kOihw, "oihw", oihw, 4);
  const int64_t K = oihw.shape[0], Cg = oihw.shape[1], R = oihw.shape[2], S = oihw.shape[3];
  FK_CHECK(out.rank == 4 && out.shape[0] == K && out.shape[1] == R && out.shape[2] == S && out.shape[3] == Cg, kOihw,
           ": out must be [", K, ", ", R, ", ", S, ", ", Cg, "] (OHWI of oihw ", describe(oihw), "), got ",
           describe(out));
  expect_contiguous(kOihw, "out", out);
  expect_no_overlap(kOihw, "out", out, "oihw", oihw);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t s = 0; s < S; ++s) set(out, get(oihw, k, c, r, s), k, r, s, c);
}

void fold_batch_norm(const TensorView& weight, const TensorView& bias, const TensorView& gamma,
                     const TensorView& beta, const TensorView& mean, const TensorView& var, double eps,
                     const TensorView& weight_out, const TensorView& bias_out) {
  expect_host_float(kFold, "weight", weight);
  FK_CHECK(weight.rank >= 1 && weight.shape[0] >= 1, kFold, ": weight must be [K, ...] with K >= 1, got ",
           describe(weight));
  expect_contiguous(kFold, "weight", weight);
  const int64_t K = weight.shape[0];
  expect_host_float(kFold, "weight_out", weight_out);
  expect_same_shape(kFold, "weight_out", weight_out, "weight", weight);
  expect_contiguous(kFold, "weight_out", weight_out);
  if (arg_present(bias)) expect_per_channel(kFold, "bias", bias, K);
  expect_per_channel(kFold, "gamma", gamma, K);
  expect_per_channel(kFold, "beta", beta, K);
  expect_per_channel(kFold, "mean", mean, K);
  expect_per_channel(kFold, "var", var, K);
  expect_per_channel(kFold, "bias_out", bias_out, K);
  FK_CHECK(std::isfinite(eps) && eps >= 0, kFold, ": eps must be finite and >= 0, got ", eps);
  // In place is fine (each element is read before it is written); other overlaps are not.
  if (weight_out.data != weight.data) expect_no_overlap(kFold, "weight_out", weight_out, "weight", weight);
  if (bias_out.data != bias.data) expect_no_overlap(kFold, "bias_out", bias_out, "bias", bias);
  expect_no_overlap(kFold, "bias_out", bias_out, "weight_out", weight_out);

  std::vector<double> t(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) {
    const double v = at1(var, k) + eps;
    FK_CHECK(v > 0, kFold, ": var[", k, "] + eps must be positive, got ", at1(var, k), " + ", eps);
    t[static_cast<size_t>(k)] = at1(gamma, k) / std::sqrt(v);
  }
  const int64_t per_k = weight.numel() / K;
  for (int64_t k = 0; k < K; ++k) {
    const double tk = t[static_cast<size_t>(k)];
    for (int64_t i = 0; i < per_k; ++i) {
      const int64_t e = k * per_k + i;
      store_element(weight_out.element_ptr(e), weight_out.dtype,
                    load_element(weight.element_ptr(e), weight.dtype) * tk);
    }
    const double b = arg_present(bias) ? at1(bias, k) : 0.0;
    set(bias_out, (b - at1(mean, k)) * tk + at1(beta, k), k);
  }
}

}  // namespace fk::ops

namespace fk::ops {

void fuse_parallel_convs(const TensorView& large, const TensorView& large_bias, const TensorView& small,
                         const TensorView& small_bias, const TensorView& out_weight, const TensorView& out_bias) {
  constexpr const char* fn = "fuse_parallel_convs";
  for (const auto& [name, v] : {std::pair<const char*, const TensorView*>{"large", &large}, {"small", &small},
                                {"out_weight", &out_weight}}) {
    expect_device(fn, name, *v, DeviceType::cpu);
    expect_dtype_in(fn, name, *v, {DType::f64, DType::f32, DType::f16, DType::bf16});
    expect_rank(fn, name, *v, 4);
  }
  const int64_t K = large.shape[0], R = large.shape[1], S = large.shape[2], Cg = large.shape[3];
  const int64_t r = small.shape[1], s = small.shape[2];
  FK_CHECK(small.shape[0] == K && small.shape[3] == Cg, fn, ": small must be [", K, ", r, s, ", Cg,
           "] (the K and C / groups of large ", describe(large), "), got ", describe(small));
  FK_CHECK(R % 2 == 1 && S % 2 == 1 && r % 2 == 1 && s % 2 == 1 && r <= R && s <= S, fn,
           ": both filters need odd sizes and small must fit inside large, got ", describe(large), " and ",
           describe(small));
  expect_same_shape(fn, "out_weight", out_weight, "large", large);
  expect_contiguous(fn, "out_weight", out_weight);
  expect_no_overlap(fn, "out_weight", out_weight, "large", large);
  expect_no_overlap(fn, "out_weight", out_weight, "small", small);
  for (const auto& [name, v] : {std::pair<const char*, const TensorView*>{"large_bias", &large_bias},
                                {"small_bias", &small_bias}})
    if (arg_present(*v)) expect_per_channel(fn, name, *v, K);
  FK_CHECK(out_bias.data != nullptr, fn, ": out_bias is required (the fused conv's bias)");
  expect_per_channel(fn, "out_bias", out_bias, K);
  const int64_t dr = (R - r) / 2, ds = (S - s) / 2;
  for (int64_t k = 0; k < K; ++k) {
    for (int64_t i = 0; i < R; ++i)
      for (int64_t j = 0; j < S; ++j)
        for (int64_t c = 0; c < Cg; ++c) {
          const bool in_small = i >= dr && i < dr + r && j >= ds && j < ds + s;
          set(out_weight, get(large, k, i, j, c) + (in_small ? get(small, k, i - dr, j - ds, c) : 0.0), k, i, j, c);
        }
    const double b = (arg_present(large_bias) ? at1(large_bias, k) : 0.0) +
                     (arg_present(small_bias) ? at1(small_bias, k) : 0.0);
    set(out_bias, b, k);
  }
}

}  // namespace fk::ops
