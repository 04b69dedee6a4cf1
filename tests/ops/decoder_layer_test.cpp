// decoder_layer on the CPU: its baseline (the composition of registry calls) and its
// reference run in the model dtype give the bits of the parts called one by one as an
// engine calls them, the composition passes the harness's check against the oracle, a
// part's candidate runs inside it, bad arguments get errors that name them, and a captured
// call rebuilds its workload. The oracle comparison on every test workload is also the
// generic op_oracle test's.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/attention.h"
#include "fk/ops/layer.h"
#include "fk/ops/linear.h"
#include "fk/ops/rope.h"
#include "harness/check/op_check.h"
#include "ops/layer/decoder_layer_reference.h"
#include "layer_parts_by_hand.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

const OpDef& layer_def() { return OpRegistry::global().def(DecoderLayerArgs::kName); }

OpCase clone_case(const OpCase& c) { return layer_test::clone_case(layer_def(), c); }
using layer_test::same_bits;

// The layer written out as an engine calls its ops (fk/ops/layer.h's order).
void call_parts_by_hand(const DecoderLayerArgs& a) {
  const DeviceType cpu = DeviceType::cpu;
  const TensorView none{};
  layer_test::qkv_and_attention_by_hand(a, a.q_norm, a.k_norm, none);
  if (a.first_layer) {  // the stream is hidden; o goes to residual_mid
    call_op(LinearArgs{a.residual_mid, a.attn_out, a.o_weight, none, none, none}, cpu, nullptr);
    call_op(RmsNormLinearArgs{a.gate_up, a.normed, a.residual, a.residual_mid, a.hidden, a.post_attention_norm,
                              a.gate_up_weight, none, a.eps},
            cpu, nullptr);
  } else {
    call_op(LinearArgs{a.hidden, a.attn_out, a.o_weight, none, none, none}, cpu, nullptr);
    call_op(RmsNormLinearArgs{a.gate_up, a.normed, a.residual, a.hidden, a.residual_mid, a.post_attention_norm,
                              a.gate_up_weight, none, a.eps},
            cpu, nullptr);
  }
  call_op(SiluAndMulArgs{a.act, a.gate_up}, cpu, nullptr);
  call_op(LinearArgs{a.hidden, a.act, a.down_weight, none, none, none}, cpu, nullptr);
}

void expect_same_outputs(const OpCase& got, const OpCase& want, const std::string& what) {
  const auto& args = layer_def().tensor_args;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].role == ArgRole::inout)
      EXPECT_TRUE(same_bits(got.tensors[i], want.tensors[i])) << what << ": " << args[i].name << " differs";
}

TEST(DecoderLayer, BaselineCompositionAndReferenceEqualThePartsCalledByHand) {
  const OpDef& def = layer_def();
  ASSERT_NE(def.composed[static_cast<int>(DeviceType::cpu)], nullptr);
  for (const Json& w : def.test_workloads) {
    const OpCase c = def.make_case(w, test::seed_for("decoder_layer_parts"));
    OpCase by_hand = clone_case(c), baseline = clone_case(c), composed = clone_case(c), reference = clone_case(c);
    call_parts_by_hand(by_hand.as<DecoderLayerArgs>());
    decoder_layer_reference(reference.as<DecoderLayerArgs>());
    expect_same_outputs(reference, by_hand, "reference " + w.dump());
    ASSERT_EQ(OpRegistry::global().baseline(def.name, DeviceType::cpu)(baseline.args_ptr(), nullptr), FK_OK)
        << last_error_message();
    ASSERT_EQ(def.composed[static_cast<int>(DeviceType::cpu)](composed.args_ptr(), nullptr), FK_OK)
        << last_error_message();
    expect_same_outputs(baseline, by_hand, "baseline " + w.dump());
    expect_same_outputs(composed, by_hand, "composition " + w.dump());
  }
}

TEST(DecoderLayer, CompositionPassesTheOracleCheck) {
  const OpDef& def = layer_def();
  for (const Json& w : def.test_workloads) {
    const auto r = bench::check_op(def, w, test::seed_for("decoder_layer_composed " + w.dump()), DeviceType::cpu,
                                   def.composed[static_cast<int>(DeviceType::cpu)]);
    EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
  }
}

// The composition calls each part through the registry: an installed candidate runs.
int silu_calls = 0;
fk_status counting_silu(const void* args, void* stream) {
  ++silu_calls;
  return OpRegistry::global().baseline(SiluAndMulArgs::kName, DeviceType::cpu)(args, stream);
}

TEST(DecoderLayer, CompositionRunsAPartsCandidate) {
  const OpDef& def = layer_def();
  OpCase c = def.make_case(def.test_workloads.front(), 7);
  OpRegistry::global().install(SiluAndMulArgs::kName, DeviceType::cpu, counting_silu, "candidate:test");
  silu_calls = 0;
  const fk_status s = def.composed[static_cast<int>(DeviceType::cpu)](c.args_ptr(), nullptr);
  OpRegistry::global().reset(SiluAndMulArgs::kName, DeviceType::cpu);
  ASSERT_EQ(s, FK_OK) << last_error_message();
  EXPECT_EQ(silu_calls, 1);
}

std::string error_of(const OpCase& c) {
  const fk_status s = OpRegistry::global().baseline(DecoderLayerArgs::kName, DeviceType::cpu)(c.args_ptr(), nullptr);
  return s == FK_OK ? "" : last_error_message();
}

TEST(DecoderLayer, NamesBadArguments) {
  const OpDef& def = layer_def();
  const Json w = def.test_workloads.front();
  {
    OpCase c = def.make_case(w, 1);
    Tensor wide = Tensor::zeros({c.tensors[0].size(0), c.tensors[0].size(1) + 1}, DType::bf16);
    c.tensors[0] = wide;  // hidden one column wider than the layer's hidden size
    c.bind(def.tensor_args);
    EXPECT_NE(error_of(c).find("decoder_layer: hidden has 65 columns but input_norm's hidden size is 64"),
              std::string::npos)
        << error_of(c);
  }
  {
    OpCase c = def.make_case(w, 1);
    c.as<DecoderLayerArgs>().num_kv_heads = 3;  // 4 query heads
    EXPECT_NE(error_of(c).find("decoder_layer: num_heads (4) must be a multiple of num_kv_heads (3)"),
              std::string::npos)
        << error_of(c);
  }
  {
    OpCase c = def.make_case(w, 1);
    c.as<DecoderLayerArgs>().num_heads = 2;  // the qkv weight holds 4 query heads
    EXPECT_NE(error_of(c).find("decoder_layer: qkv_weight must be"), std::string::npos) << error_of(c);
  }
  {
    OpCase c = def.make_case(w, 1);
    c.tensors[6] = Tensor::empty({0}, DType::bf16);  // k_norm
    c.tensors[5] = Tensor::zeros({64}, DType::bf16);  // q_norm alone
    c.bind(def.tensor_args);
    EXPECT_NE(error_of(c).find("decoder_layer: q_norm and k_norm come together"), std::string::npos) << error_of(c);
  }
  {
    OpCase c = def.make_case(w, 1);
    c.tensors[15].data_as<int64_t>()[1] = c.tensors[15].data_as<int64_t>()[0];  // two tokens, one slot
    c.bind(def.tensor_args);
    const Tensor residual_before = c.tensors[1].clone();
    EXPECT_NE(error_of(c).find("both map to slot"), std::string::npos) << error_of(c);
    EXPECT_TRUE(same_bits(c.tensors[1], residual_before)) << "bad slots must be reported before anything is written";
  }
}

TEST(DecoderLayer, CapturedCallRebuildsItsWorkload) {
  const OpDef& def = layer_def();
  ASSERT_TRUE(def.workload_from_call != nullptr);
  for (const Json& w : def.test_workloads) {
    const OpCase c = def.make_case(w, 3);
    const Json got = def.workload_from_call(c.args_ptr());
    for (const char* key : {"hidden", "heads", "kv_heads", "head_dim", "intermediate", "qo_lens", "kv_lens"})
      EXPECT_EQ(got.at(key), w.at(key)) << key << " of " << w.dump() << " -> " << got.dump();
    // The rebuilt workload makes a case of the same shapes.
    const OpCase again = def.make_case(got, 3);
    for (size_t i = 0; i < c.tensors.size(); ++i)
      EXPECT_EQ(again.tensors[i].shape(), c.tensors[i].shape()) << def.tensor_args[i].name << " of " << w.dump();
  }
}

}  // namespace
}  // namespace fk::ops
