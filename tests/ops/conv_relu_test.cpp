// conv2d's ReLU epilogue (MobileNetV4's activation) beyond the generic oracle test, which
// runs the definition's ReLU workloads: hand-computed values with the order bias, ReLU,
// residual (a negative residual survives: it is added after the ReLU), negative zero
// clamped to zero, and the workload field that names the activation.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fk/element.h"
#include "fk/ops/conv.h"
#include "ops/common/case_builder.h"
#include "ops/conv_test_util.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::Conv2dArgs;
using ops::ConvActivation;

TEST(Conv2dRelu, BiasThenReluThenResidual) {
  // 1x1 conv, weight 2, bias -1: out = max(2x - 1, 0) + residual.
  const Tensor in = test::filled4({1, 1, 4, 1}, DType::f32, [](auto, auto, auto w, auto) { return w - 1.0; });
  const Tensor res = test::filled4({1, 1, 4, 1}, DType::f32, [](auto, auto, auto w, auto) { return -5.0 + w; });
  const Tensor w = test::filled4({1, 1, 1, 1}, DType::f32, [](auto...) { return 2.0; });
  Tensor bias = Tensor::empty({1}, DType::f32);
  set(bias.view(), -1.0, 0);
  Tensor out = Tensor::empty({1, 1, 4, 1}, DType::f32);
  Conv2dArgs a{};
  a.out = out;
  a.input = in;
  a.weight = w;
  a.bias = bias;
  a.activation = ConvActivation::relu;
  test::expect_ok(DeviceType::cpu, a);
  for (int x = 0; x < 4; ++x) EXPECT_EQ(get(out.view(), 0, 0, x, 0), std::max(2.0 * (x - 1) - 1.0, 0.0)) << x;
  a.residual = res;
  test::expect_ok(DeviceType::cpu, a);
  for (int x = 0; x < 4; ++x) EXPECT_EQ(get(out.view(), 0, 0, x, 0), std::max(2.0 * (x - 1) - 1.0, 0.0) - 5.0 + x) << x;
}

TEST(Conv2dRelu, NegativeZeroBecomesZero) {
  // -0 * 1 + -0 = -0 before the activation; ReLU gives +0 (max(x, 0), as torch's relu).
  const Tensor in = test::filled4({1, 1, 1, 1}, DType::f32, [](auto...) { return -0.0; });
  const Tensor w = test::filled4({1, 1, 1, 1}, DType::f32, [](auto...) { return 1.0; });
  Tensor out = Tensor::empty({1, 1, 1, 1}, DType::f32);
  Conv2dArgs a{};
  a.out = out;
  a.input = in;
  a.weight = w;
  a.activation = ConvActivation::relu;
  test::expect_ok(DeviceType::cpu, a);
  EXPECT_EQ(get(out.view(), 0, 0, 0, 0), 0.0);
  EXPECT_FALSE(std::signbit(out.data_as<float>()[0]));
}

TEST(Conv2dRelu, WorkloadNamesTheActivation) {
  const OpDef& def = OpRegistry::global().def(Conv2dArgs::kName);
  const Json w = {{"batch", 1},        {"height", 5}, {"width", 5},          {"in_channels", 8},
                  {"out_channels", 8}, {"kernel", 3}, {"activation", "relu"}};
  const OpCase c = def.make_case(w, test::seed_for("conv_relu_workload"));
  EXPECT_EQ(c.as<Conv2dArgs>().activation, ConvActivation::relu);
  EXPECT_EQ(def.workload_from_call(c.args_ptr()).at("activation"), "relu");
  int relu_workloads = 0;
  for (const Json& t : def.test_workloads) relu_workloads += ops::wl_string(t, "activation", "silu") == "relu";
  EXPECT_GE(relu_workloads, 3);
  try {
    def.make_case(Json{{"height", 5}, {"width", 5}, {"in_channels", 8}, {"out_channels", 8}, {"activation", "gelu"}},
                  1);
    ADD_FAILURE() << "activation gelu was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"relu\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fk
