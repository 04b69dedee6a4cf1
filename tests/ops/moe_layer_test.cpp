// moe_layer on the CPU: its baseline is its parts called one by one as the engine calls
// them (bit for bit), the oracle fails a wrong part, the output check accepts a token routed
// either way at an exact tie of its router logits and nothing else, bad arguments are
// named, and a captured call rebuilds its workload. The oracle comparison on every test
// workload is also the generic op_oracle test's.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/attention.h"
#include "fk/ops/linear.h"
#include "fk/ops/moe.h"
#include "fk/ops/moe_layer.h"
#include "fk/ops/rope.h"
#include "harness/check/op_check.h"
#include "ops/layer/moe_layer_reference.h"
#include "layer_parts_by_hand.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

using Args = MoeLayerArgs;

const OpDef& def() { return OpRegistry::global().def(Args::kName); }

// Indices of the case's tensors (the order of tensor_args).
enum : size_t { kHidden = 0, kResidual = 1, kQNorm = 5, kRouter = 9, kW13 = 10, kW2 = 11, kSlots = 16, kTopkIds = 30 };

OpCase clone_case(const OpCase& c) { return layer_test::clone_case(def(), c); }
using layer_test::same_bits;

// The layer written out as the engine's DecoderModel calls its ops for a Mixtral or
// Qwen3-MoE layer (fused_norm_layer, attention_block, moe_mlp).
void call_parts_by_hand(const Args& a) {
  const DeviceType cpu = DeviceType::cpu;
  const TensorView none{};
  layer_test::qkv_and_attention_by_hand(a, a.q_norm, a.k_norm, none);
  const TensorView o = a.first_layer ? a.residual_mid : a.hidden, s = a.first_layer ? a.hidden : a.residual_mid;
  call_op(LinearArgs{o, a.attn_out, a.o_weight, none, none, none}, cpu, nullptr);
  call_op(RmsNormLinearArgs{a.router_logits, a.normed, a.residual, o, s, a.post_attention_norm, a.router_weight, none,
                            a.eps},
          cpu, nullptr);
  call_op(FusedMoeArgs{a.hidden, a.normed, a.w13, a.w2, none, none, a.router_logits, a.topk_weights, a.topk_ids,
                       a.moe_workspace, a.renormalize},
          cpu, nullptr);
}

TEST(MoeLayer, BaselineIsThePartsCalledByHand) {
  layer_test::expect_baseline_is_parts_by_hand<Args>(def(), test::seed_for("MoeLayer.Parts"), call_parts_by_hand);
}

// Wrong parts, installed as candidates, reach the composed baseline; the check fails each.
template <class A>
fk_status with_baseline(A a, void* stream) {
  return OpRegistry::global().baseline(A::kName, DeviceType::cpu)(&a, stream);
}
fk_status renormalize_flipped(const void* args, void* stream) {
  auto a = *static_cast<const FusedMoeArgs*>(args);
  a.renormalize = 1 - a.renormalize;
  return with_baseline(a, stream);
}
fk_status qk_norms_skipped(const void* args, void* stream) {
  auto a = *static_cast<const RopeAndCacheArgs*>(args);
  a.q_weight = TensorView{};
  a.k_weight = TensorView{};
  return with_baseline(a, stream);
}
fk_status residual_add_skipped(const void* args, void* stream) {
  auto a = *static_cast<const RmsNormLinearArgs*>(args);
  if (a.residual_in.data == nullptr) return with_baseline(a, stream);
  // The stream's update written, but the norm fed the sub-layer output alone.
  const fk_status s = with_baseline(a, stream);
  if (s != FK_OK) return s;
  auto alone = a;
  alone.residual_in = TensorView{};
  alone.residual_out = TensorView{};
  return with_baseline(alone, stream);
}

TEST(MoeLayer, OracleFailsAWrongPart) {
  const uint64_t seed = test::seed_for("MoeLayer.WrongPart");
  const struct {
    Json workload;
    const char* op;
    fk_op_fn fn;
  } wrong[] = {{def().test_workloads[0], "fused_moe", renormalize_flipped},
               {def().test_workloads[1], "rope_and_cache", qk_norms_skipped},
               {def().test_workloads[0], "rms_norm_linear", residual_add_skipped}};
  for (const auto& [w, op, fn] : wrong) {
    const auto honest = bench::check_op(def(), w, seed, DeviceType::cpu);
    EXPECT_TRUE(honest.passed) << w.dump() << ": " << honest.message;
    OpRegistry::global().install(op, DeviceType::cpu, fn, "candidate:test");
    const auto r = bench::check_op(def(), w, seed, DeviceType::cpu);
    OpRegistry::global().reset(op, DeviceType::cpu);
    EXPECT_FALSE(r.passed) << "a wrong " << op << " passed the oracle";
  }
}

// One token whose router rows are multiples of its own normalised row x, scaled to logits
// of about 1 for expert 3, 0.5 for experts 5 and 6 (rows equal bit for bit: an exact tie at
// the k-th place) and -0.5 for the rest. The token may take 5 or 6 (the check recomputes
// either from the output's own residual), never 0.
TEST(MoeLayer, CheckAcceptsEitherSideOfATieAndNothingElse) {
  const Json w{{"hidden", 64}, {"heads", 2}, {"kv_heads", 1}, {"head_dim", 64}, {"experts", 8}, {"topk", 2},
               {"inter", 16},  {"qo_lens", {1}}, {"kv_lens", {6}}};
  OpCase host = def().make_case(w, test::seed_for("MoeLayer.Tie"));
  OpCase oracle = bench::make_oracle_case(def(), host);
  bench::run_oracle(def(), oracle);  // the residual does not depend on the router
  const auto& a = host.as<Args>();
  const MoeRouterRows x = moe_router_rows(moe_layer_router(a), oracle.tensors[kResidual].view(), 0, 1);
  const TensorView router = host.tensors[kRouter].view();
  double norm2 = 0;
  for (int64_t h = 0; h < 64; ++h) norm2 += get(x.x.view(), 0, h) * get(x.x.view(), 0, h);
  for (int64_t e = 0; e < 8; ++e)
    for (int64_t h = 0; h < 64; ++h)
      set(router, (e == 3 ? 1.0 : e == 5 || e == 6 ? 0.5 : -0.5) * get(x.x.view(), 0, h) / norm2, e, h);
  oracle = bench::make_oracle_case(def(), host);
  bench::run_oracle(def(), oracle);
  EXPECT_EQ(def().check_outputs(host, oracle, oracle), "");

  // The oracle's outputs with the token's hidden row on experts {3, other}.
  auto routed = [&](int32_t other) {
    OpCase out = oracle;
    out.tensors[kHidden] = oracle.tensors[kHidden].clone();
    out.bind(def().tensor_args);
    const MoeLayerRouter r = moe_layer_router(a);
    const MoeRouterRows rows = moe_router_rows(r, oracle.tensors[kResidual].view(), 0, 1);
    const std::vector<int32_t> sel = {3, other};
    const std::vector<double> wts = routing_weights(r, rows.logits.view(), 0, sel);
    const std::vector<double> y3 = r.expert_row(rows.x.view(), 0, 3).y, yo = r.expert_row(rows.x.view(), 0, other).y;
    for (int64_t h = 0; h < 64; ++h)
      set(out.tensors[kHidden].view(), wts[0] * y3[static_cast<size_t>(h)] + wts[1] * yo[static_cast<size_t>(h)], 0, h);
    return out;
  };
  EXPECT_EQ(def().check_outputs(host, oracle, routed(6)), "");
  EXPECT_EQ(def().check_outputs(host, oracle, routed(5)), "");
  EXPECT_NE(def().check_outputs(host, oracle, routed(0)).find("output 'hidden': 1 of 1 token rows"),
            std::string::npos);
}

std::string error_of(const OpCase& c) {
  const fk_status s = OpRegistry::global().baseline(Args::kName, DeviceType::cpu)(c.args_ptr(), nullptr);
  return s == FK_OK ? "" : last_error_message();
}

TEST(MoeLayer, NamesBadArguments) {
  const Json w = def().test_workloads.front();  // 4 query heads of 64, hidden 64, 8 experts of 32, top-2
  const struct {
    size_t slot;
    Tensor bad;
    const char* message;
  } cases[] = {
      {kQNorm, Tensor::zeros({64}, DType::bf16), "moe_layer: q_norm and k_norm come together"},
      {kRouter, Tensor::zeros({8, 63}, DType::bf16), "router_weight"},
      {kW13, Tensor::zeros({8, 63, 64}, DType::bf16), "w13 must be [experts, 2 * intermediate, hidden]"},
      {kW2, Tensor::zeros({8, 64, 31}, DType::bf16), "w2 must be [8, 64, 32]"},
      {kTopkIds, Tensor::zeros({3, 9}, DType::i32), "topk_ids must be [tokens, k] with 1 <= k <= experts (8)"},
  };
  for (const auto& [slot, bad, message] : cases) {
    OpCase c = def().make_case(w, 1);
    c.tensors[slot] = bad;
    c.bind(def().tensor_args);
    EXPECT_NE(error_of(c).find(message), std::string::npos) << def().tensor_args[slot].name << ": " << error_of(c);
  }
  {
    OpCase c = def().make_case(w, 1);
    c.as<Args>().renormalize = 2;
    EXPECT_NE(error_of(c).find("renormalize must be 0 or 1"), std::string::npos) << error_of(c);
  }
  OpCase c = def().make_case(w, 1);
  c.tensors[kSlots].data_as<int64_t>()[1] = c.tensors[kSlots].data_as<int64_t>()[0];  // two tokens, one slot
  const Tensor residual_before = c.tensors[kResidual].clone();
  EXPECT_NE(error_of(c).find("both map to slot"), std::string::npos) << error_of(c);
  OpCase oracle = bench::make_oracle_case(def(), c);
  EXPECT_THROW(bench::run_oracle(def(), oracle), std::exception);
  EXPECT_TRUE(same_bits(c.tensors[kResidual], residual_before)) << "bad slots must be reported before any write";
}

TEST(MoeLayer, CapturedCallRebuildsItsWorkload) {
  for (const Json& w : def().test_workloads) {
    const OpCase c = def().make_case(w, 3);
    const Json got = def().workload_from_call(c.args_ptr());
    for (const char* key : {"hidden", "heads", "kv_heads", "experts", "topk", "inter", "qo_lens", "kv_lens"})
      EXPECT_EQ(got.at(key), w.at(key)) << key << " of " << w.dump() << " -> " << got.dump();
    for (const char* key : {"qk_norm", "qkv_bias", "renormalize", "first_layer", "window_left", "dtype"})
      if (w.contains(key)) EXPECT_EQ(got.at(key), w.at(key)) << key << " of " << w.dump() << " -> " << got.dump();
    const OpCase again = def().make_case(got, 3);
    for (size_t i = 0; i < c.tensors.size(); ++i)
      EXPECT_EQ(again.tensors[i].shape(), c.tensors[i].shape()) << def().tensor_args[i].name << " of " << w.dump();
  }
}

}  // namespace
}  // namespace fk::ops
