// yolov10_c2f beyond the generic oracle test: the composed baseline (conv2d calls) against
// the double reference with one and with every bottleneck slot used, with and without
// shortcuts, on a channel-slice input view; and named errors.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/yolo.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::Yolov10C2fArgs;
using test::expect_invalid;

OpCase c2f_case(uint64_t seed, int64_t n, bool shortcut, const char* dtype = "f32") {
  return OpRegistry::global().def("yolov10_c2f").make_case(
      Json{{"batch", 2}, {"height", 4}, {"width", 3}, {"in_channels", 6}, {"out_channels", 8}, {"bottlenecks", n},
           {"shortcut", shortcut}, {"dtype", dtype}},
      seed);
}

TEST(Yolov10C2f, ComposedMatchesReferenceWithSlicedInput) {
  const uint64_t seed = test::seed_for("Yolov10C2f");
  for (int64_t n : {1, 4})
    for (bool shortcut : {false, true}) {
      OpCase k = c2f_case(seed + static_cast<uint64_t>(n), n, shortcut);
      Yolov10C2fArgs a = k.as<Yolov10C2fArgs>();
      // The input as channels [2, 8) of a wider buffer.
      const Tensor wide = ops::random_tensor({2, 4, 3, 10}, DType::f32, seed, 99, -2.f, 2.f);
      TensorView in = wide.view();
      in.data = static_cast<char*>(in.data) + 2 * sizeof(float);
      in.shape[3] = 6;
      a.input = in;
      call_op(a, DeviceType::cpu, nullptr);  // f32 out: the composed path
      const Tensor want = Tensor::empty(k.tensors[0].shape(), DType::f64);
      Yolov10C2fArgs r = a;
      r.out = want;
      call_op(r, DeviceType::cpu, nullptr);  // f64 out: the reference
      double worst = 0;
      for (int64_t i = 0; i < want.numel(); ++i)
        worst = std::max(worst, std::abs(static_cast<double>(k.tensors[0].data_as<float>()[i]) - want.data_as<double>()[i]) /
                                    (1.0 + std::abs(want.data_as<double>()[i])));
      EXPECT_LT(worst, 1e-5) << "n " << n << " shortcut " << shortcut << " seed " << seed;
    }
}

TEST(Yolov10C2f, ClearErrors) {
  OpCase k = c2f_case(1, 2, true, "f16");
  Yolov10C2fArgs a = k.as<Yolov10C2fArgs>();
  a.num_bottlenecks = 5;
  expect_invalid(DeviceType::cpu, a, "num_bottlenecks must be in [1, 4]");
  a = k.as<Yolov10C2fArgs>();
  a.num_bottlenecks = 3;  // a third bottleneck's slots are empty, and cv2 is sized for two
  expect_invalid(DeviceType::cpu, a, "cv2_weight must be");
  a = k.as<Yolov10C2fArgs>();
  a.shortcut = 2;
  expect_invalid(DeviceType::cpu, a, "shortcut must be 0 or 1");
  const Tensor small_mid = Tensor::empty({2, 4, 3, 3}, DType::f16);
  a = k.as<Yolov10C2fArgs>();
  a.mid = small_mid;
  expect_invalid(DeviceType::cpu, a, "mid must be [2, 4, 3, 4]");
  const Tensor f32_w = Tensor::empty({4, 3, 3, 4}, DType::f32);
  a = k.as<Yolov10C2fArgs>();
  a.m_weight[1] = f32_w;
  expect_invalid(DeviceType::cpu, a, "m_weight");
}

}  // namespace
}  // namespace fk
