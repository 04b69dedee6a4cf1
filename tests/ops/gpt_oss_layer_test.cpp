// gpt_oss_layer on the CPU: its baseline is its parts called one by one as the engine calls
// them (bit for bit), the oracle fails a wrong part, the output check accepts a token routed
// either way at an exact tie of its router logits and nothing else, bad arguments are
// named, and a captured call rebuilds its workload. The oracle comparison on every test
// workload is also the generic op_oracle test's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/attention.h"
#include "fk/ops/attention_sink.h"
#include "fk/ops/gpt_oss_layer.h"
#include "fk/ops/linear.h"
#include "fk/ops/moe.h"
#include "fk/ops/moe_swigluoai.h"
#include "fk/ops/rope.h"
#include "harness/check/op_check.h"
#include "ops/layer/gpt_oss_layer_check.h"
#include "ops/layer/gpt_oss_layer_reference.h"
#include "layer_parts_by_hand.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

using Args = GptOssLayerArgs;

const OpDef& def() { return OpRegistry::global().def(Args::kName); }

// Indices of the case's tensors (the order of tensor_args).
enum : size_t { kHidden = 0, kResidual = 1, kRouter = 9, kRouterBias = 10, kSlots = 19 };

OpCase clone_case(const OpCase& c) { return layer_test::clone_case(def(), c); }
using layer_test::same_bits;

// The layer written out as the engine's DecoderModel calls its ops for a gpt-oss layer.
void call_parts_by_hand(const Args& a) {
  const DeviceType cpu = DeviceType::cpu;
  const TensorView none{};
  layer_test::qkv_and_attention_by_hand(a, none, none, a.lse);
  const TensorView out = layer_test::heads_of(a.attn_out, 0, a.num_heads, a.head_dim);
  call_op(AttentionSinkRescaleArgs{out, a.lse, a.sinks}, cpu, nullptr);
  const TensorView o = a.first_layer ? a.residual_mid : a.hidden, s = a.first_layer ? a.hidden : a.residual_mid;
  call_op(LinearArgs{o, a.attn_out, a.o_weight, a.o_bias, none, none}, cpu, nullptr);
  call_op(RmsNormLinearArgs{a.router_logits, a.normed, a.residual, o, s, a.post_attention_norm, a.router_weight,
                            a.router_bias, a.eps},
          cpu, nullptr);
  call_op(MoeTopkSoftmaxArgs{a.topk_weights, a.topk_ids, a.router_logits, 1}, cpu, nullptr);
  call_op(FusedExpertsSwigluOaiArgs{a.hidden, a.normed, a.w13, a.w13_bias, a.w2, a.w2_bias, a.topk_weights,
                                    a.topk_ids, a.moe_workspace, a.swiglu_alpha, a.swiglu_limit},
          cpu, nullptr);
}

TEST(GptOssLayer, BaselineIsThePartsCalledByHand) {
  layer_test::expect_baseline_is_parts_by_hand<Args>(def(), test::seed_for("GptOssLayer.Parts"), call_parts_by_hand);
}

// Wrong parts, installed as candidates, reach the composed baseline; the check fails each.
template <class A>
fk_status with_baseline(A a, void* stream) {
  return OpRegistry::global().baseline(A::kName, DeviceType::cpu)(&a, stream);
}
fk_status sinks_ignored(const void*, void*) { return FK_OK; }
fk_status softmax_over_all_experts(const void* args, void* stream) {
  auto a = *static_cast<const MoeTopkSoftmaxArgs*>(args);
  a.renormalize = 0;
  return with_baseline(a, stream);
}
fk_status unclamped_experts(const void* args, void* stream) {
  auto a = *static_cast<const FusedExpertsSwigluOaiArgs*>(args);
  a.limit = 1e9f;
  return with_baseline(a, stream);
}
fk_status linear_without_bias(const void* args, void* stream) {
  auto a = *static_cast<const LinearArgs*>(args);
  a.bias = TensorView{};
  return with_baseline(a, stream);
}

TEST(GptOssLayer, OracleFailsAWrongPart) {
  const uint64_t seed = test::seed_for("GptOssLayer.WrongPart");
  Json clamped = def().test_workloads[3];  // f16, limit 0.75: most gates and ups clamped
  const struct {
    Json workload;
    const char* op;
    fk_op_fn fn;
  } wrong[] = {// The first layer's prefill: its first tokens see a key or two, so every head's sink
               // takes a large share (over many keys, random sinks may all take little).
               {def().test_workloads[2], "attention_sink_rescale", sinks_ignored},
               {def().test_workloads[1], "moe_topk_softmax", softmax_over_all_experts},
               {clamped, "fused_experts_swigluoai", unclamped_experts},
               {def().test_workloads[0], "linear", linear_without_bias}};
  for (const auto& [w, op, fn] : wrong) {
    const auto honest = bench::check_op(def(), w, seed, DeviceType::cpu);
    EXPECT_TRUE(honest.passed) << w.dump() << ": " << honest.message;
    OpRegistry::global().install(op, DeviceType::cpu, fn, "candidate:test");
    const auto r = bench::check_op(def(), w, seed, DeviceType::cpu);
    OpRegistry::global().reset(op, DeviceType::cpu);
    EXPECT_FALSE(r.passed) << "a wrong " << op << " passed the oracle";
  }
}

// Every router row the same and the biases tied at the k-th place: expert 3 first, then 5
// and 6 exactly equal, the rest a whole unit lower. A token may take 5 or 6 (the check
// recomputes either from the output's own residual), never 0.
TEST(GptOssLayer, CheckAcceptsEitherSideOfATieAndNothingElse) {
  const Json w{{"hidden", 64}, {"heads", 2}, {"kv_heads", 1}, {"experts", 8}, {"topk", 2}, {"inter", 16},
               {"qo_lens", {1, 1}},  {"kv_lens", {4, 9}}};
  OpCase host = def().make_case(w, test::seed_for("GptOssLayer.Tie"));
  const TensorView router = host.tensors[kRouter].view(), bias = host.tensors[kRouterBias].view();
  for (int64_t e = 1; e < 8; ++e)
    for (int64_t h = 0; h < 64; ++h) set(router, get(router, 0, h), e, h);
  for (int64_t e = 0; e < 8; ++e) set(bias, e == 3 ? 1.0 : e == 5 || e == 6 ? 0.5 : -0.5, e);
  OpCase oracle = bench::make_oracle_case(def(), host);
  bench::run_oracle(def(), oracle);
  const auto& a = host.as<Args>();
  EXPECT_EQ(check_gpt_oss_layer_outputs(host, oracle, oracle), "");

  // The oracle's outputs with each token's hidden row on experts {3, e}.
  auto routed = [&](int32_t other) {
    OpCase out = oracle;
    out.tensors[kHidden] = oracle.tensors[kHidden].clone();
    out.bind(def().tensor_args);
    const TensorView residual = oracle.tensors[kResidual].view(), hidden = out.tensors[kHidden].view();
    const MoeLayerRouter router = gpt_oss_layer_router(a);
    const MoeRouterRows r = moe_router_rows(router, residual, 0, 2);
    for (int64_t t = 0; t < 2; ++t) {
      const double l3 = get(r.logits.view(), t, 3), lo = get(r.logits.view(), t, other);
      const double w3 = 1.0 / (1.0 + std::exp(lo - l3));
      const std::vector<double> y3 = router.expert_row(r.x, t, 3).y, yo = router.expert_row(r.x, t, other).y;
      for (int64_t h = 0; h < 64; ++h)
        set(hidden, w3 * y3[static_cast<size_t>(h)] + (1 - w3) * yo[static_cast<size_t>(h)], t, h);
    }
    return out;
  };
  EXPECT_EQ(check_gpt_oss_layer_outputs(host, oracle, routed(6)), "");
  EXPECT_NE(check_gpt_oss_layer_outputs(host, oracle, routed(0)).find("output 'hidden': 2 of 2 token rows"),
            std::string::npos);
}

std::string error_of(const OpCase& c) {
  const fk_status s = OpRegistry::global().baseline(Args::kName, DeviceType::cpu)(c.args_ptr(), nullptr);
  return s == FK_OK ? "" : last_error_message();
}

TEST(GptOssLayer, NamesBadArguments) {
  const Json w = def().test_workloads.front();  // 4 query heads, 8 experts of 32, top-2
  const struct {
    size_t slot;
    Tensor bad;
    const char* message;
  } cases[] = {
      {5, Tensor::zeros({3}, DType::f32), "gpt_oss_layer: sinks must be [num_heads = 4]"},
      {5, Tensor::zeros({4}, DType::bf16), "sinks"},
      {10, Tensor::zeros({7}, DType::bf16), "router_bias"},
      {11, Tensor::zeros({8, 63, 64}, DType::bf16), "w13 must be [experts, 2 * intermediate, hidden]"},
      {13, Tensor::zeros({8, 64, 31}, DType::bf16), "w2 must be [8, 64, 32]"},
      {34, Tensor::zeros({3, 9}, DType::i32), "topk_ids must be [tokens, k] with 1 <= k <= experts (8)"},
  };
  for (const auto& [slot, bad, message] : cases) {
    OpCase c = def().make_case(w, 1);
    c.tensors[slot] = bad;
    c.bind(def().tensor_args);
    EXPECT_NE(error_of(c).find(message), std::string::npos) << def().tensor_args[slot].name << ": " << error_of(c);
  }
  OpCase c = def().make_case(w, 1);
  c.tensors[kSlots].data_as<int64_t>()[1] = c.tensors[kSlots].data_as<int64_t>()[0];  // two tokens, one slot
  const Tensor residual_before = c.tensors[kResidual].clone();
  EXPECT_NE(error_of(c).find("both map to slot"), std::string::npos) << error_of(c);
  OpCase oracle = bench::make_oracle_case(def(), c);
  EXPECT_THROW(bench::run_oracle(def(), oracle), std::exception);
  EXPECT_TRUE(same_bits(c.tensors[kResidual], residual_before)) << "bad slots must be reported before any write";
}

TEST(GptOssLayer, CapturedCallRebuildsItsWorkload) {
  for (const Json& w : def().test_workloads) {
    const OpCase c = def().make_case(w, 3);
    const Json got = def().workload_from_call(c.args_ptr());
    for (const char* key : {"hidden", "heads", "kv_heads", "experts", "topk", "inter", "qo_lens", "kv_lens"})
      EXPECT_EQ(got.at(key), w.at(key)) << key << " of " << w.dump() << " -> " << got.dump();
    const OpCase again = def().make_case(got, 3);
    for (size_t i = 0; i < c.tensors.size(); ++i)
      EXPECT_EQ(again.tensors[i].shape(), c.tensors[i].shape()) << def().tensor_args[i].name << " of " << w.dump();
  }
}

}  // namespace
}  // namespace fk::ops
