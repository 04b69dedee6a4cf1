// uir_block beyond the generic oracle tests (which run every test workload, the composed
// conv2d calls against the op's own double-precision block): the output size of each stride
// placement, and errors that name the wrong field.
#include <gtest/gtest.h>

#include "fk/element.h"
#include "fk/ops/conv.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::UirBlockArgs;
using test::expect_invalid;
using test::expect_ok;

const OpDef& def() { return OpRegistry::global().def(UirBlockArgs::kName); }

TEST(UirBlock, OutputSizesFollowTheStridedConvolution) {
  // Stride on dw_mid (k 5): 10 -> 5; on dw_start when there is no dw_mid (k 3): 8 -> 4.
  OpCase a = def().make_case(Json{{"size", 10}, {"channels", 8}, {"mid", 16}, {"out_channels", 8}, {"start", 3},
                                  {"mid_kernel", 5}, {"stride", 2}},
                             1);
  EXPECT_EQ(a.as<UirBlockArgs>().start_out.shape[1], 10);
  EXPECT_EQ(a.as<UirBlockArgs>().out.shape[1], 5);
  OpCase b = def().make_case(
      Json{{"size", 8}, {"channels", 8}, {"mid", 16}, {"out_channels", 8}, {"start", 3}, {"stride", 2}}, 1);
  EXPECT_EQ(b.as<UirBlockArgs>().start_out.shape[1], 4);
  EXPECT_EQ(b.as<UirBlockArgs>().out.shape[1], 4);
  expect_ok(DeviceType::cpu, b.as<UirBlockArgs>());
}

TEST(UirBlockErrors, BadArgumentsAreClearErrors) {
  OpCase c = def().make_case(Json{{"size", 6}, {"channels", 8}, {"mid", 16}, {"out_channels", 8}, {"start", 3},
                                  {"mid_kernel", 3}, {"stride", 1}, {"residual", true}},
                             test::seed_for("UirBlock"));
  const UirBlockArgs good = c.as<UirBlockArgs>();
  expect_ok(DeviceType::cpu, good);
  UirBlockArgs a = good;
  a.stride = 3;
  expect_invalid(DeviceType::cpu, a, "stride must be 1 or 2");
  a = good;
  a.stride = 2;
  expect_invalid(DeviceType::cpu, a, "a residual needs stride 1 and Cout == C");
  a = good;
  a.expand_weight = Tensor::zeros({16, 1, 1, 4}, DType::f16);
  expect_invalid(DeviceType::cpu, a, "expand_weight must be [M, 1, 1, 8]");
  a = good;
  a.mid_weight = Tensor::zeros({16, 4, 4, 1}, DType::f16);
  expect_invalid(DeviceType::cpu, a, "mid_weight must be a depthwise [16, k, k, 1] with k odd");
  a = good;
  a.expand_out = Tensor::zeros({1, 6, 6, 8}, DType::f16);
  expect_invalid(DeviceType::cpu, a, "expand_out must be a contiguous [1, 6, 6, 16]");
}

}  // namespace
}  // namespace fk
