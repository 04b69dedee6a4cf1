// gdn_layer beyond the generic oracle test: its CPU baseline is its parts called one by one
// (bit for bit, prefill and decode), it writes the call's slots and no others, the oracle
// fails a wrong part (a state leaked into a fresh sequence among them), and bad arguments
// are named.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/gated_delta.h"
#include "fk/ops/gdn_layer.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/ops/ssm_conv.h"
#include "fk/ops/ssm_gating.h"
#include "harness/check/op_check.h"
#include "ops/common/views.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::GdnLayerArgs;

const OpDef& def() { return OpRegistry::global().def(GdnLayerArgs::kName); }

// hidden 64, 2 key heads and 4 value heads of 16: 128 conv channels, 4 taps.
const Json kPrefill{{"hidden", 64}, {"hk", 2}, {"hv", 4}, {"dk", 16}, {"dv", 16}, {"seq_lens", {5, 70, 2}}};
const Json kDecode{{"hidden", 64}, {"hk", 2}, {"hv", 4}, {"dk", 16}, {"dv", 16}, {"decode", true}, {"batch", 3}};

using ops::views::columns;
TensorView heads(const TensorView& m, int64_t col, int64_t width, int64_t d) {
  return ops::views::heads(columns(m, col, width), width / d, d);
}
TensorView head_rows(const TensorView& m, int64_t d) { return ops::views::head_rows(m, m.shape[1] / d, d); }

// The layer by hand from its parts, on the case's own tensors (weights, states, scratch).
void run_by_hand(const GdnLayerArgs& a) {
  const TensorView none{};
  const int64_t K = 16, V = 16, kd = 2 * K, vd = 4 * V, cd = 2 * kd + vd, Hv = 4;
  test::expect_ok(DeviceType::cpu, ops::LinearArgs{a.proj, a.hidden, a.in_proj, none, none, none});
  test::expect_ok(DeviceType::cpu, ops::LinearArgs{a.z, a.hidden, a.z_proj, none, none, none});
  if (a.decode)
    test::expect_ok(DeviceType::cpu, ops::CausalConv1dUpdateArgs{a.mixed, columns(a.proj, 0, cd), a.conv_weight, none,
                                                                 a.conv_state, a.state_indices, 1});
  else
    test::expect_ok(DeviceType::cpu,
                    ops::CausalConv1dArgs{a.mixed, columns(a.proj, 0, cd), a.conv_weight, none, a.conv_state,
                                          a.cu_seqlens, a.state_indices, a.has_initial_state_bool, 1});
  test::expect_ok(DeviceType::cpu, ops::GdnGatingArgs{a.g, a.beta, columns(a.proj, cd + Hv, Hv),
                                                      columns(a.proj, cd, Hv), a.a_log, a.dt_bias});
  const ops::GatedDeltaRuleArgs rule{heads(a.core, 0, vd, V),       a.ssm_state, heads(a.mixed, 0, kd, K),
                                     heads(a.mixed, kd, kd, K),      heads(a.mixed, 2 * kd, vd, V),
                                     a.g,                            a.beta,      a.cu_seqlens,
                                     a.state_indices,                a.decode ? none : a.has_initial_state,
                                     0.0f,                           1};
  if (a.decode) {
    ops::FusedRecurrentGatedDeltaRuleArgs r{};
    static_cast<ops::GatedDeltaRuleArgs&>(r) = rule;
    test::expect_ok(DeviceType::cpu, r);
  } else {
    ops::ChunkGatedDeltaRuleArgs r{};
    static_cast<ops::GatedDeltaRuleArgs&>(r) = rule;
    test::expect_ok(DeviceType::cpu, r);
  }
  test::expect_ok(DeviceType::cpu, ops::RmsNormGatedArgs{head_rows(a.core_normed, V), head_rows(a.core, V),
                                                         head_rows(a.z, V), a.norm_weight, a.eps,
                                                         ops::NormGateActivation::silu});
  test::expect_ok(DeviceType::cpu, ops::LinearArgs{a.out, a.core_normed, a.out_proj, none, none, none});
}

TEST(GdnLayer, IsItsPartsOneByOne) {
  const uint64_t seed = test::seed_for("GdnLayer.Parts");
  for (Json w : {kPrefill, kDecode}) {
    for (const char* dtype : {"bf16", "f16"}) {
      w["dtype"] = dtype;
      SCOPED_TRACE(w.dump());
      OpCase op = def().make_case(w, seed), parts = def().make_case(w, seed);
      const Tensor conv_before = op.tensors[9].clone(), ssm_before = op.tensors[10].clone();
      test::expect_ok(DeviceType::cpu, op.as<GdnLayerArgs>());
      run_by_hand(parts.as<GdnLayerArgs>());
      for (const int i : {0, 9, 10})
        EXPECT_EQ(test::count_changed_bytes(op.tensors[static_cast<size_t>(i)], parts.tensors[static_cast<size_t>(i)]), 0)
            << def().tensor_args[static_cast<size_t>(i)].name;
      EXPECT_GT(test::count_changed_bytes(op.tensors[9], conv_before), 0) << "the conv state was not written";
      EXPECT_GT(test::count_changed_bytes(op.tensors[10], ssm_before), 0) << "the delta state was not written";
    }
  }
}

// The slots no sequence of the call names (spare_slots) come back unchanged.
TEST(GdnLayer, LeavesOtherSlotsAlone) {
  Json w = kPrefill;
  w["spare_slots"] = 3;
  OpCase c = def().make_case(w, test::seed_for("GdnLayer.Spare"));
  const Tensor conv_before = c.tensors[9].clone(), ssm_before = c.tensors[10].clone();
  test::expect_ok(DeviceType::cpu, c.as<GdnLayerArgs>());
  const TensorView slots = c.tensors[12].view();
  for (int64_t s = 0; s < c.tensors[10].size(0); ++s) {
    bool used = false;
    for (int64_t n = 0; n < slots.shape[0]; ++n) used = used || get_index(slots, n) == s;
    const auto slot_bytes = [&](const Tensor& t) {
      const size_t n = t.nbytes() / static_cast<size_t>(t.size(0));
      return std::vector<std::byte>(static_cast<const std::byte*>(t.data()) + s * n,
                                    static_cast<const std::byte*>(t.data()) + (s + 1) * n);
    };
    EXPECT_EQ(slot_bytes(c.tensors[9]) == slot_bytes(conv_before), !used) << "conv slot " << s;
    EXPECT_EQ(slot_bytes(c.tensors[10]) == slot_bytes(ssm_before), !used) << "delta slot " << s;
  }
}

// Wrong parts, installed as candidates, reach the composed baseline; the oracle fails each.
template <class Args>
fk_status with_baseline(Args a, void* stream) {
  return OpRegistry::global().baseline(Args::kName, DeviceType::cpu)(&a, stream);
}
fk_status conv_without_silu(const void* args, void* stream) {
  auto a = *static_cast<const ops::CausalConv1dArgs*>(args);
  a.silu = 0;
  return with_baseline(a, stream);
}
fk_status conv_update_without_silu(const void* args, void* stream) {
  auto a = *static_cast<const ops::CausalConv1dUpdateArgs*>(args);
  a.silu = 0;
  return with_baseline(a, stream);
}
fk_status gates_swapped(const void* args, void* stream) {
  auto a = *static_cast<const ops::GdnGatingArgs*>(args);
  std::swap(a.a, a.b);
  return with_baseline(a, stream);
}
// A fresh sequence starts from whatever its slot holds: the state of an earlier request.
fk_status state_leaked(const void* args, void* stream) {
  auto a = *static_cast<const ops::ChunkGatedDeltaRuleArgs*>(args);
  a.has_initial_state = TensorView{};
  return with_baseline(a, stream);
}
fk_status recurrent_without_l2norm(const void* args, void* stream) {
  auto a = *static_cast<const ops::FusedRecurrentGatedDeltaRuleArgs*>(args);
  a.use_qk_l2norm_in_kernel = 0;
  return with_baseline(a, stream);
}
fk_status norm_gate_sigmoid(const void* args, void* stream) {
  auto a = *static_cast<const ops::RmsNormGatedArgs*>(args);
  a.activation = ops::NormGateActivation::sigmoid;
  return with_baseline(a, stream);
}

TEST(GdnLayer, OracleFailsAWrongPart) {
  const uint64_t seed = test::seed_for("GdnLayer.WrongPart");
  const struct {
    Json workload;
    const char* op;
    fk_op_fn fn;
  } wrong[] = {{kPrefill, "causal_conv1d", conv_without_silu},
               {kDecode, "causal_conv1d_update", conv_update_without_silu},
               {kPrefill, "gdn_gating", gates_swapped},
               {kPrefill, "chunk_gated_delta_rule", state_leaked},
               {kDecode, "fused_recurrent_gated_delta_rule", recurrent_without_l2norm},
               {kDecode, "rms_norm_gated", norm_gate_sigmoid}};
  for (const Json& w : {kPrefill, kDecode}) {
    const auto honest = bench::check_op(def(), w, seed, DeviceType::cpu);
    EXPECT_TRUE(honest.passed) << w.dump() << ": " << honest.message;
  }
  for (const auto& [w, op, fn] : wrong) {
    OpRegistry::global().install(op, DeviceType::cpu, fn, "candidate:test");
    const auto r = bench::check_op(def(), w, seed, DeviceType::cpu);
    OpRegistry::global().reset(op, DeviceType::cpu);
    EXPECT_FALSE(r.passed) << "a wrong " << op << " passed the oracle";
  }
}

TEST(GdnLayerErrors, NamesWhatIsWrong) {
  OpCase c = def().make_case(kPrefill, test::seed_for("GdnLayer.Errors"));
  const auto good = c.as<GdnLayerArgs>();
  auto bad = good;
  bad.has_initial_state_bool = TensorView{};
  test::expect_invalid(DeviceType::cpu, bad, "has_initial_state and has_initial_state_bool come together");
  bad = good;
  Tensor flags = c.tensors[14].clone();
  flags.data_as<uint8_t>()[0] ^= 1;
  bad.has_initial_state_bool = flags.view();
  test::expect_invalid(DeviceType::cpu, bad, "disagree for sequence 0");
  bad = good;
  bad.decode = 1;
  test::expect_invalid(DeviceType::cpu, bad, "decode takes one token per sequence, got 77 tokens for 3 sequences");
  bad = good;
  bad.in_proj = Tensor::empty({136, 63}, DType::bf16).view();
  test::expect_invalid(DeviceType::cpu, bad, "in_proj must be [136, 64]");
  bad = good;
  bad.conv_weight = Tensor::empty({100, 4}, DType::bf16).view();
  test::expect_invalid(DeviceType::cpu, bad, "conv_weight's 100 channels");
  bad = good;
  bad.ssm_state = Tensor::empty({5, 3, 16, 16}, DType::f32).view();
  test::expect_invalid(DeviceType::cpu, bad, "ssm_state must be [slots, 4, K, 16]");
  bad = good;
  bad.a_log = Tensor::empty({4}, DType::bf16).view();
  test::expect_invalid(DeviceType::cpu, bad, "a_log");
  bad = good;
  bad.g = Tensor::empty({77, 4}, DType::bf16).view();
  test::expect_invalid(DeviceType::cpu, bad, "g must be f32");
  bad = good;
  bad.eps = 0;
  test::expect_invalid(DeviceType::cpu, bad, "eps must be positive");
  // A part's own check still speaks: a slot outside the pool.
  bad = good;
  Tensor slots = c.tensors[12].clone();
  slots.data_as<int32_t>()[1] = 99;
  bad.state_indices = slots.view();
  test::expect_invalid(DeviceType::cpu, bad, "99");
}

}  // namespace
}  // namespace fk
