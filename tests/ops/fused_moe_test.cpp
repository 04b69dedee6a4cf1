// fused_moe on the CPU: the reference is the routing reference then the experts'
// reference, the output check follows the selection made, and bad arguments are clear
// errors. (Its test workloads also run through op_oracle_test.)
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "fk/op_registry.h"
#include "fk/ops/moe.h"

namespace fk::ops {
namespace {

const OpDef& def() { return OpRegistry::global().def("fused_moe"); }

std::string error_of(const FusedMoeArgs& a) {
  const fk_status s = OpRegistry::global().active(a.kName, DeviceType::cpu)(&a, nullptr);
  return s == FK_OK ? "" : last_error_message();
}

const Json kSmall = {{"tokens", 3}, {"topk", 2}, {"experts", 8}, {"hidden", 64}, {"inter", 32}};

TEST(FusedMoe, EqualsRoutingThenFusedExperts) {
  OpCase c = def().make_case(kSmall, 3);
  FusedMoeArgs& a = c.as<FusedMoeArgs>();
  call_op(a, DeviceType::cpu, nullptr);

  Tensor weights = Tensor::empty({3, 2}, DType::f32), ids = Tensor::empty({3, 2}, DType::i32);
  call_op(MoeTopkSoftmaxArgs{weights, ids, a.gating_output, a.renormalize}, DeviceType::cpu, nullptr);
  Tensor out = Tensor::empty({3, 64}, a.hidden.dtype);
  call_op(FusedExpertsArgs{out, a.hidden, a.w13, a.w2, {}, {}, weights, ids, a.workspace}, DeviceType::cpu, nullptr);
  EXPECT_EQ(std::memcmp(a.topk_ids.data, ids.data(), ids.nbytes()), 0);
  EXPECT_EQ(std::memcmp(a.topk_weights.data, weights.data(), weights.nbytes()), 0);
  EXPECT_EQ(std::memcmp(a.out.data, out.data(), out.nbytes()), 0);
}

TEST(FusedMoe, CheckFollowsTheSelectionMade) {
  OpCase host = def().make_case(kSmall, 4);
  OpCase oracle = host;
  for (size_t i : {0, 7, 8}) oracle.tensors[i] = host.tensors[i].clone();
  oracle.bind(def().tensor_args);
  call_op(oracle.as<FusedMoeArgs>(), DeviceType::cpu, nullptr);
  EXPECT_EQ(def().check_outputs(host, oracle, oracle), "");

  // The same experts in another order (weights with them) pass; a wrong expert fails.
  OpCase swapped = oracle;
  for (size_t i : {0, 7, 8}) swapped.tensors[i] = oracle.tensors[i].clone();
  swapped.bind(def().tensor_args);
  float* w = swapped.tensors[7].data_as<float>();
  int32_t* id = swapped.tensors[8].data_as<int32_t>();
  std::swap(w[0], w[1]);
  std::swap(id[0], id[1]);
  EXPECT_EQ(def().check_outputs(host, oracle, swapped), "");
  std::swap(id[0], id[1]);  // ids back, weights still swapped: they no longer belong to their experts
  EXPECT_NE(def().check_outputs(host, oracle, swapped).find("routing"), std::string::npos);
  std::swap(w[0], w[1]);
  swapped.tensors[0].data_as<uint16_t>()[5] ^= 0x4000;  // a wrong output element
  EXPECT_NE(def().check_outputs(host, oracle, swapped).find("output 'out'"), std::string::npos);
}

TEST(FusedMoe, CostAddsTheLogitsToTheExperts) {
  const OpCase c = def().make_case({{"tokens", 1}, {"topk", 2}, {"experts", 16}, {"hidden", 64}, {"inter", 32}}, 1);
  const OpCost cost = def().cost(c);
  const double experts = 2 * (2.0 * 32 * 64 + 64 * 32) * 2;  // two distinct experts, bf16
  const double activations = 64 * 2 * 2 + 2 * 8;
  EXPECT_DOUBLE_EQ(cost.bytes, experts + activations + 16 * 2);
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 2 * 3 * 64 * 32 + 5.0 * 16);
}

TEST(FusedMoe, BadArgumentsAreClearErrors) {
  OpCase c = def().make_case(kSmall, 1);
  FusedMoeArgs& a = c.as<FusedMoeArgs>();
  const TensorView gating = a.gating_output;

  a.gating_output.shape[0] = 2;  // one row short
  EXPECT_NE(error_of(a).find("fused_moe: gating_output must have one row per token (3 rows"), std::string::npos)
      << error_of(a);
  a.gating_output = gating;

  const Tensor wide = Tensor::empty({3, 9}, DType::bf16);
  a.gating_output = wide;  // 9 logits for 8 experts
  EXPECT_NE(error_of(a).find("fused_moe: gating_output must have one column per expert of w13 (8)"),
            std::string::npos)
      << error_of(a);
  a.gating_output = gating;

  a.gating_output.dtype = DType::i32;
  EXPECT_NE(error_of(a).find("fused_moe: gating_output"), std::string::npos) << error_of(a);
  a.gating_output = gating;

  const TensorView ids = a.topk_ids;
  const Tensor f32_ids = Tensor::empty({3, 2}, DType::f32);
  a.topk_ids = f32_ids;
  EXPECT_NE(error_of(a).find("fused_moe: topk_ids must be i32"), std::string::npos) << error_of(a);
  a.topk_ids = ids;

  const TensorView w2 = a.w2;
  const Tensor narrow = Tensor::empty({8, 64, 16}, DType::bf16);
  a.w2 = narrow;
  EXPECT_NE(error_of(a).find("fused_moe: w2 dimension 2 must be 32"), std::string::npos) << error_of(a);
  a.w2 = w2;

  a.topk_ids = a.hidden;  // an output over an input
  a.topk_ids.dtype = DType::i32;
  a.topk_ids.shape[1] = 2;
  a.topk_ids.strides[0] = 2;
  EXPECT_NE(error_of(a).find("must not overlap"), std::string::npos) << error_of(a);
  a.topk_ids = ids;
  EXPECT_EQ(error_of(a), "");
}

}  // namespace
}  // namespace fk::ops
