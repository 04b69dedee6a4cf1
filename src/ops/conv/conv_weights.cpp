#include "ops/conv/conv_weights.h"

#include <cmath>
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

void expect_per_channel(const char* arg, const TensorView& v, int64_t K) {
  expect_host_float(kFold, arg, v);
  expect_rank(kFold, arg, v, 1);
  expect_dim(kFold, arg, v, 0, K);
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
  if (arg_present(bias)) expect_per_channel("bias", bias, K);
  expect_per_channel("gamma", gamma, K);
  expect_per_channel("beta", beta, K);
  expect_per_channel("mean", mean, K);
  expect_per_channel("var", var, K);
  expect_per_channel("bias_out", bias_out, K);
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
