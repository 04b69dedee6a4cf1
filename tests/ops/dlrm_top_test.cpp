// dlrm_top beyond the generic oracle tests (which run every test workload against the f64
// oracle): the oracle against an independent computation written here (the pairs listed
// explicitly, the MLP in double without rounding) within the dtype's rounding; the model's
// padded weight rows (the padding is never read); the definition (MLPerf's shapes, cost);
// errors that name the wrong field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/ops/recsys.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::DlrmTopArgs;
using test::expect_invalid;
using test::expect_ok;

const OpDef& def() { return OpRegistry::global().def(DlrmTopArgs::kName); }

// The top MLP's input of sample b, written from the description: the dense row, then
// x_i . x_j for i > j over [dense, sparse_0, ...].
std::vector<double> features(const DlrmTopArgs& a, int64_t b) {
  const int64_t f = a.sparse.shape[1], d = a.dense.shape[1];
  auto x = [&](int64_t i, int64_t k) { return i == 0 ? get(a.dense, b, k) : get(a.sparse, b, i - 1, k); };
  std::vector<double> z;
  for (int64_t k = 0; k < d; ++k) z.push_back(x(0, k));
  for (int64_t i = 1; i <= f; ++i)
    for (int64_t j = 0; j < i; ++j) {
      double dot = 0;
      for (int64_t k = 0; k < d; ++k) dot += x(i, k) * x(j, k);
      z.push_back(dot);
    }
  return z;
}

TEST(DlrmTop, OracleMatchesAnIndependentForwardWithinRounding) {
  const Json w{{"batch", 6}, {"features", 4}, {"dim", 16}, {"top", {32, 16, 1}}};
  OpCase c = def().make_case(w, test::seed_for("DlrmTop"));
  DlrmTopArgs a = c.as<DlrmTopArgs>();
  Tensor logits = Tensor::empty({6, 1}, DType::f64);
  a.logits = logits.view();
  expect_ok(DeviceType::cpu, a);
  for (int64_t b = 0; b < 6; ++b) {
    std::vector<double> h = features(a, b);
    for (int l = 0; l < a.layers; ++l) {
      const int64_t n = a.weight[l].shape[0];
      std::vector<double> y(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        double s = get(a.bias[l], i);
        for (size_t k = 0; k < h.size(); ++k) s += h[k] * get(a.weight[l], i, static_cast<int64_t>(k));
        y[static_cast<size_t>(i)] = l + 1 < a.layers ? std::max(s, 0.0) : s;
      }
      h = std::move(y);
    }
    // bf16 rounding of the interaction and two layers' outputs: a few units of 2^-8.
    EXPECT_NEAR(get(logits.view(), b, 0), h[0], 0.03 * (1 + std::fabs(h[0]))) << b;
  }
}

TEST(DlrmTop, PaddingColumnsAreNeverRead) {
  // NaN in every weight row's padding: the logits stay finite and equal the clean case's.
  const Json w{{"batch", 3}, {"features", 2}, {"dim", 12}, {"top", {10, 1}}};  // 15 and 10 inputs: padded rows
  OpCase c = def().make_case(w, test::seed_for("DlrmTop", 1));
  DlrmTopArgs a = c.as<DlrmTopArgs>();
  Tensor clean = Tensor::empty({3, 1}, DType::bf16), dirty = Tensor::empty({3, 1}, DType::bf16);
  a.logits = clean.view();
  expect_ok(DeviceType::cpu, a);
  const int64_t inputs[] = {15, 10};
  for (int l = 0; l < 2; ++l)
    for (int64_t i = 0; i < a.weight[l].shape[0]; ++i)
      for (int64_t k = inputs[l]; k < a.weight[l].shape[1]; ++k) set(a.weight[l], std::nan(""), i, k);
  a.logits = dirty.view();
  expect_ok(DeviceType::cpu, a);
  for (int64_t b = 0; b < 3; ++b) EXPECT_EQ(get(dirty.view(), b, 0), get(clean.view(), b, 0)) << b;
}

TEST(DlrmTop, DefinitionAtMlperfShapes) {
  EXPECT_EQ(def().level, "L3");
  ASSERT_EQ(def().bench_workloads.size(), 3u);
  OpCase c = def().make_case(def().bench_workloads[0], 1);
  const auto& a = c.as<DlrmTopArgs>();
  EXPECT_EQ(a.layers, 5);
  EXPECT_EQ(a.weight[0].shape[1], 480);  // 479 features in rows padded to 8
  const OpCost cost = def().cost(c);
  // One sample: 27 x 26 / 2 dots of 128, then 479x1024 + 1024x1024 + 1024x512 + 512x256 + 256.
  EXPECT_DOUBLE_EQ(cost.flops, 27.0 * 26 * 128 + 2.0 * (479 * 1024 + 1024 * 1024 + 1024 * 512 + 512 * 256 + 256));
}

TEST(DlrmTopErrors, BadArgumentsAreClearErrors) {
  OpCase c = def().make_case(Json{{"batch", 2}, {"features", 3}, {"dim", 8}, {"top", {16, 1}}}, 3);
  const DlrmTopArgs good = c.as<DlrmTopArgs>();
  expect_ok(DeviceType::cpu, good);
  DlrmTopArgs a = good;
  a.layers = 0;
  expect_invalid(DeviceType::cpu, a, "layers must be 1 to 8");
  a = good;
  a.weight[0] = Tensor::zeros({16, 8}, DType::bf16);
  expect_invalid(DeviceType::cpu, a, "weight[0] must be a contiguous [N, 16] (its 14 inputs in rows padded to 8)");
  a = good;
  a.bias[1] = Tensor::zeros({2}, DType::bf16);
  expect_invalid(DeviceType::cpu, a, "bias[1] must be a contiguous [1]");
  a = good;
  a.pre = Tensor::zeros({2, 8}, DType::bf16);
  expect_invalid(DeviceType::cpu, a, "pre must be a contiguous workspace of at least [2, 16]");
  a = good;
  a.sparse = Tensor::zeros({2, 3, 4}, DType::bf16);
  expect_invalid(DeviceType::cpu, a, "sparse must be [2, F, 8]");
  a = good;
  a.logits = Tensor::zeros({2, 2}, DType::bf16);
  expect_invalid(DeviceType::cpu, a, "logits must be [2, 1]");
}

}  // namespace
}  // namespace fk
