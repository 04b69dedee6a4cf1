// dfl_box_decode beyond the generic oracle test: hand-computed boxes (one-hot, uniform and
// two-bin DFL distributions), scores, a row-strided raw view (a slice of a wider buffer),
// an f64 run matching the f32 one within rounding, and clear errors.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/element.h"
#include "fk/ops/detect.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::DflBoxDecodeArgs;
using test::expect_invalid;
using test::expect_ok;

struct Case {
  Tensor raw, anchors, boxes, scores;
  DflBoxDecodeArgs args() const {
    DflBoxDecodeArgs a;
    a.boxes = boxes, a.scores = scores, a.raw = raw, a.anchors = anchors, a.reg_max = 4;
    return a;
  }
};

// Two anchors of reg_max 4 and 2 classes: raw [1, 2, 18].
Case make_case(DType raw_dtype = DType::f32) {
  Case c;
  c.raw = Tensor::zeros({1, 2, 18}, raw_dtype);
  c.anchors = Tensor::empty({2, 3}, DType::f32);
  const float an[6] = {1.5f, 2.5f, 8.f, 0.5f, 0.5f, 32.f};
  std::copy(an, an + 6, c.anchors.data_as<float>());
  c.boxes = Tensor::empty({1, 2, 4}, DType::f32);
  c.scores = Tensor::empty({1, 2, 2}, DType::f32);
  const TensorView r = c.raw;
  // Anchor 0: left one-hot on bin 3, top uniform (1.5), right bins 1 and 2 equal (1.5), bottom bin 0.
  set(r, 60.0, 0, 0, 3);
  set(r, 30.0, 0, 0, 8 + 1), set(r, 30.0, 0, 0, 8 + 2);
  set(r, 60.0, 0, 0, 12 + 0);
  set(r, 2.0, 0, 0, 16), set(r, -1.0, 0, 0, 17);
  // Anchor 1: every side uniform.
  set(r, 0.0, 0, 1, 16), set(r, 40.0, 0, 1, 17);
  return c;
}

TEST(DflBoxDecode, HandComputedBoxesAndScores) {
  const Case c = make_case();
  expect_ok(DeviceType::cpu, c.args());
  const TensorView b = c.boxes, s = c.scores;
  EXPECT_NEAR(get(b, 0, 0, 0), (1.5 - 3.0) * 8, 1e-5);
  EXPECT_NEAR(get(b, 0, 0, 1), (2.5 - 1.5) * 8, 1e-5);
  EXPECT_NEAR(get(b, 0, 0, 2), (1.5 + 1.5) * 8, 1e-5);
  EXPECT_NEAR(get(b, 0, 0, 3), (2.5 + 0.0) * 8, 1e-5);
  for (int q = 0; q < 4; ++q) EXPECT_NEAR(get(b, 0, 1, q), (q < 2 ? 0.5 - 1.5 : 0.5 + 1.5) * 32, 1e-5);
  EXPECT_NEAR(get(s, 0, 0, 0), 1 / (1 + std::exp(-2.0)), 1e-7);
  EXPECT_NEAR(get(s, 0, 0, 1), 1 / (1 + std::exp(1.0)), 1e-7);
  EXPECT_NEAR(get(s, 0, 1, 0), 0.5, 1e-7);
  EXPECT_EQ(get(s, 0, 1, 1), 1.0);
}

TEST(DflBoxDecode, StridedRawViewAndF64Outputs) {
  const uint64_t seed = test::seed_for("DflBoxDecodeStrided");
  // raw as a slice of a wider [1, 6, 40] buffer (anchor stride 40).
  const Tensor wide = ops::random_tensor({1, 6, 40}, DType::f16, seed, 1, -5.f, 5.f);
  TensorView raw = wide.view();
  raw.shape[2] = 4 * 4 + 3;
  Tensor anchors = Tensor::empty({6, 3}, DType::f32);
  for (int i = 0; i < 6; ++i) {
    anchors.data_as<float>()[3 * i] = 0.5f + static_cast<float>(i % 3);
    anchors.data_as<float>()[3 * i + 1] = 0.5f + static_cast<float>(i / 3);
    anchors.data_as<float>()[3 * i + 2] = 16.f;
  }
  DflBoxDecodeArgs a;
  const Tensor boxes = Tensor::empty({1, 6, 4}, DType::f32), scores = Tensor::empty({1, 6, 3}, DType::f32);
  const Tensor boxes64 = Tensor::empty({1, 6, 4}, DType::f64), scores64 = Tensor::empty({1, 6, 3}, DType::f64);
  a.raw = raw, a.anchors = anchors, a.reg_max = 4, a.boxes = boxes, a.scores = scores;
  expect_ok(DeviceType::cpu, a);
  a.boxes = boxes64, a.scores = scores64;
  expect_ok(DeviceType::cpu, a);
  for (int i = 0; i < 6; ++i) {
    for (int q = 0; q < 4; ++q) EXPECT_NEAR(get(boxes.view(), 0, i, q), get(boxes64.view(), 0, i, q), 1e-4);
    // The box spans lie within the bins' range: 0 <= d <= reg_max - 1.
    const double w = get(boxes64.view(), 0, i, 2) - get(boxes64.view(), 0, i, 0);
    EXPECT_GE(w, 0.0);
    EXPECT_LE(w, 2 * 3 * 16.0);
    for (int k = 0; k < 3; ++k) {
      const double x = get(raw, 0, i, 16 + k);
      EXPECT_NEAR(get(scores64.view(), 0, i, k), 1 / (1 + std::exp(-x)), 1e-12);
    }
  }
}

TEST(DflBoxDecode, ClearErrors) {
  const Case c = make_case();
  DflBoxDecodeArgs a = c.args();
  a.reg_max = 5;  // 4 * 5 = 20 > 18
  expect_invalid(DeviceType::cpu, a, "must exceed 4 * reg_max");
  a = c.args();
  a.reg_max = 0;
  expect_invalid(DeviceType::cpu, a, "reg_max must be >= 1");
  const Tensor short_anchors = Tensor::empty({1, 3}, DType::f32);
  a = c.args();
  a.anchors = short_anchors;
  expect_invalid(DeviceType::cpu, a, "anchors must be [2, 3]");
  const Tensor f16_boxes = Tensor::empty({1, 2, 4}, DType::f16);
  a = c.args();
  a.boxes = f16_boxes;
  expect_invalid(DeviceType::cpu, a, "boxes");
  const Tensor wrong_scores = Tensor::empty({1, 2, 3}, DType::f32);
  a = c.args();
  a.scores = wrong_scores;
  expect_invalid(DeviceType::cpu, a, "scores must be [1, 2, 2]");
  const Tensor i32_raw = Tensor::zeros({1, 2, 18}, DType::i32);
  a = c.args();
  a.raw = i32_raw;
  expect_invalid(DeviceType::cpu, a, "raw");
}

}  // namespace
}  // namespace fk
