// pairformer_transition beyond the generic oracle test: a hand-computed row that tells the
// [u | w] halves apart (silu(u) * w, not silu(w) * u), rows that stay independent of each
// other, and named errors (CPU implementation).
#include <gtest/gtest.h>

#include <cmath>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/pairformer.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::TransitionArgs;
using test::expect_invalid;
using test::expect_ok;

const OpDef& def() { return OpRegistry::global().def(TransitionArgs::kName); }

Tensor filled(const Shape& shape, std::initializer_list<double> values) {
  Tensor t = Tensor::empty(shape, DType::f32);
  int64_t i = 0;
  for (double v : values) store_element(t.view().element_ptr(i++), DType::f32, v);
  EXPECT_EQ(i, t.numel());
  return t;
}

double silu(double x) { return x / (1 + std::exp(-x)); }

TEST(PairformerTransition, HandComputedRow) {
  // x = [1, 3]: mean 2, variance 1, normalised [-r, r] with r = 1 / sqrt(1 + 1e-5); the layer
  // norm's weight [2, 1] and bias [0.5, 0] make a = [0.5 - 2r, r]. u = a . [1, 0], w = a .
  // [0, 2]; act = silu(u) * w; the output rows [1] and [-1] add [act, -act].
  Tensor x = filled({1, 2}, {1, 3});
  const Tensor ln_w = filled({2}, {2, 1}), ln_b = filled({2}, {0.5, 0});
  const Tensor w_in = filled({2, 2}, {1, 0, 0, 2}), w_out = filled({2, 1}, {1, -1});
  Tensor normed = Tensor::empty({1, 2}, DType::f32), hidden = Tensor::empty({1, 2}, DType::f32);
  Tensor act = Tensor::empty({1, 1}, DType::f32), update = Tensor::empty({1, 2}, DType::f32);
  expect_ok(DeviceType::cpu, TransitionArgs{x, {ln_w, ln_b, w_in, w_out}, normed, hidden, act, update});
  const double r = 1 / std::sqrt(1 + 1e-5), u = 0.5 - 2 * r, w = 2 * r, want = silu(u) * w;
  EXPECT_NEAR(x.data_as<float>()[0], 1 + want, 1e-6);
  EXPECT_NEAR(x.data_as<float>()[1], 3 - want, 1e-6);
  EXPECT_GT(std::fabs(silu(w) * u - want), 0.1);  // the swapped halves would be told apart
}

TEST(PairformerTransition, RowsAreIndependent) {
  // Changing one row of x changes that row's output only.
  const Json w{{"rows", 5}, {"channels", 8}, {"hidden", 32}, {"dtype", "f32"}};
  OpCase a = def().make_case(w, test::seed_for("transition_rows"));
  OpCase b = def().make_case(w, test::seed_for("transition_rows"));
  for (int64_t c = 0; c < 8; ++c) b.tensors[0].data_as<float>()[2 * 8 + c] = 0.25f * static_cast<float>(c);
  expect_ok(DeviceType::cpu, a.as<TransitionArgs>());
  expect_ok(DeviceType::cpu, b.as<TransitionArgs>());
  for (int64_t i = 0; i < 5 * 8; ++i) {
    if (i / 8 == 2) continue;
    EXPECT_EQ(a.tensors[0].data_as<float>()[i], b.tensors[0].data_as<float>()[i]) << i;
  }
}

TEST(PairformerTransition, NamedErrors) {
  const Json w{{"rows", 3}, {"channels", 8}, {"hidden", 16}, {"dtype", "f32"}};
  {
    OpCase c = def().make_case(w, 1);
    c.tensors[3] = Tensor::empty({31, 8}, DType::f32);
    c.bind(def().tensor_args);
    expect_invalid(DeviceType::cpu, c.as<TransitionArgs>(), "in_weight must be [2 F, 8]");
  }
  {
    OpCase c = def().make_case(w, 1);
    c.tensors[4] = Tensor::empty({8, 12}, DType::f32);
    c.bind(def().tensor_args);
    expect_invalid(DeviceType::cpu, c.as<TransitionArgs>(), "out_weight must be [8, 16]");
  }
  {
    OpCase c = def().make_case(w, 1);
    c.tensors[6] = Tensor::empty({3, 16}, DType::f32);
    c.bind(def().tensor_args);
    expect_invalid(DeviceType::cpu, c.as<TransitionArgs>(), "hidden must be [3, 32]");
  }
  {
    OpCase c = def().make_case(w, 1);
    c.tensors[1] = Tensor::empty({8}, DType::f16);
    c.bind(def().tensor_args);
    expect_invalid(DeviceType::cpu, c.as<TransitionArgs>(), "ln_weight");
  }
}

}  // namespace
}  // namespace fk
