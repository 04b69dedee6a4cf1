// encoder_layer beyond the generic oracle test: its CPU baseline is its parts called one by
// one (bit for bit), it updates hidden in place and leaves the weights alone, and bad
// arguments are named.
#include <gtest/gtest.h>

#include "fk/op_registry.h"
#include "fk/ops/elementwise.h"
#include "fk/ops/layer.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/ops/varlen_attention.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::EncoderLayerArgs;

const OpDef& def() { return OpRegistry::global().def(EncoderLayerArgs::kName); }

OpCase tiny_case(uint64_t seed, const char* dtype = "f16") {
  return def().make_case(Json{{"hidden", 64}, {"heads", 2}, {"intermediate", 96}, {"seq_lens", {3, 9, 1}},
                              {"dtype", dtype}, {"approximate", "tanh"}},
                         seed);
}

TEST(EncoderLayer, IsItsPartsOneByOne) {
  const uint64_t seed = test::seed_for("EncoderLayer.Parts");
  for (const char* dtype : {"f16", "bf16"}) {
    OpCase c = tiny_case(seed, dtype);
    const auto& a = c.as<EncoderLayerArgs>();
    const Tensor hidden_in = c.tensors[0].clone(), qkv_w = c.tensors[1].clone();
    // The parts by hand, on a copy of hidden.
    Tensor h = hidden_in.clone();
    const TensorView none{};
    const int64_t T = h.size(0), H = 64;
    Tensor qkv = Tensor::empty({T, 3 * H}, a.qkv.dtype), attn = Tensor::empty({T, H}, a.qkv.dtype);
    Tensor sub = Tensor::empty({T, H}, a.qkv.dtype), inter = Tensor::empty({T, 96}, a.qkv.dtype);
    Tensor act = Tensor::empty({T, 96}, a.qkv.dtype);
    test::expect_ok(DeviceType::cpu, ops::LinearArgs{qkv, h, a.qkv_weight, a.qkv_bias, none, none});
    auto heads = [&](const Tensor& m, int64_t col) {
      TensorView v = m.view();
      v.data = static_cast<char*>(v.data) + col * 2;
      v.rank = 3;
      v.shape[0] = T, v.shape[1] = 2, v.shape[2] = 32;
      v.strides[0] = m.view().strides[0], v.strides[1] = 32, v.strides[2] = 1;
      return v;
    };
    ops::VarlenAttentionArgs va{heads(attn, 0), heads(qkv, 0), heads(qkv, H), heads(qkv, 2 * H), a.cu_seqlens,
                                a.cu_seqlens, a.max_seqlen, a.max_seqlen, 1.f / std::sqrt(32.f), 0};
    test::expect_ok(DeviceType::cpu, va);
    test::expect_ok(DeviceType::cpu, ops::LinearArgs{sub, attn, a.o_weight, a.o_bias, none, none});
    test::expect_ok(DeviceType::cpu, ops::AddLayerNormArgs{h, sub, h, a.attn_norm, a.attn_norm_bias, a.eps});
    test::expect_ok(DeviceType::cpu, ops::LinearArgs{inter, h, a.up_weight, a.up_bias, none, none});
    test::expect_ok(DeviceType::cpu, ops::GeluArgs{act, inter, a.gelu});
    test::expect_ok(DeviceType::cpu, ops::LinearArgs{sub, act, a.down_weight, a.down_bias, none, none});
    test::expect_ok(DeviceType::cpu, ops::AddLayerNormArgs{h, sub, h, a.out_norm, a.out_norm_bias, a.eps});

    test::expect_ok(DeviceType::cpu, a);
    EXPECT_EQ(test::count_changed_bytes(c.tensors[0], h), 0) << dtype;
    EXPECT_GT(test::count_changed_bytes(c.tensors[0], hidden_in), 0) << "hidden was not updated";
    EXPECT_EQ(test::count_changed_bytes(c.tensors[1], qkv_w), 0) << "a weight was written";
  }
}

TEST(EncoderLayerErrors, NamesWhatIsWrong) {
  const uint64_t seed = test::seed_for("EncoderLayer.Errors");
  OpCase c = tiny_case(seed);
  const auto good = c.as<EncoderLayerArgs>();
  auto bad = good;
  const Tensor small = Tensor::empty({10, 64}, DType::f16);
  bad.up_weight = Tensor::empty({96, 63}, DType::f16).view();
  test::expect_invalid(DeviceType::cpu, bad, "up_weight");
  bad = good;
  bad.num_heads = 3;
  test::expect_invalid(DeviceType::cpu, bad, "num_heads");
  bad = good;
  bad.max_seqlen = 2;
  test::expect_invalid(DeviceType::cpu, bad, "max_seqlen");
  bad = good;
  bad.o_bias = Tensor::empty({64}, DType::bf16).view();
  test::expect_invalid(DeviceType::cpu, bad, "o_bias");
  bad = good;
  bad.sub = small.view();
  test::expect_invalid(DeviceType::cpu, bad, "sub");
  bad = good;
  bad.eps = 0;
  test::expect_invalid(DeviceType::cpu, bad, "eps");
}

}  // namespace
}  // namespace fk
