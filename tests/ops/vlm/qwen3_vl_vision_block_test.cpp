// qwen3_vl_vision_block beyond the generic oracle test: its CPU baseline is its parts called
// one by one (bit for bit, f16 and bf16), it updates hidden in place and leaves the weights
// alone, the oracle check fails when a part is dropped or swapped, and bad arguments are
// named.
#include <gtest/gtest.h>

#include <cmath>

#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/elementwise.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/ops/rope.h"
#include "fk/ops/varlen_attention.h"
#include "fk/ops/vision_block.h"
#include "harness/check/op_check.h"
#include "ops/common/views.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::Qwen3VLVisionBlockArgs;

const OpDef& def() { return OpRegistry::global().def(Qwen3VLVisionBlockArgs::kName); }

// Three frames of different grids (4 x 4, 4 x 6, 2 x 2 patches), heads of 72 as Qwen3-VL's.
const Json kTiny{{"hidden", 144}, {"heads", 2}, {"intermediate", 160}, {"seq_lens", {16, 24, 4}}};

OpCase tiny_case(uint64_t seed, const char* dtype) {
  Json w = kTiny;
  w["dtype"] = dtype;
  return def().make_case(w, seed);
}

// Columns [col, col + width) of a [T, *] tensor, flat or as [T, width / d, d] heads.
TensorView columns(const Tensor& m, int64_t col, int64_t width) { return ops::views::columns(m.view(), col, width); }
TensorView heads(const Tensor& m, int64_t col, int64_t width, int64_t d) {
  return ops::views::heads(columns(m, col, width), width / d, d);
}

TEST(Qwen3VLVisionBlock, IsItsPartsOneByOne) {
  const uint64_t seed = test::seed_for("Qwen3VLVisionBlock.Parts");
  for (const char* dtype : {"f16", "bf16"}) {
    OpCase c = tiny_case(seed, dtype);
    const auto& a = c.as<Qwen3VLVisionBlockArgs>();
    const Tensor hidden_in = c.tensors[0].clone(), qkv_w = c.tensors[3].clone(), fc2_w = c.tensors[11].clone();
    // The parts by hand, on a copy of hidden, in buffers of their own.
    Tensor h = hidden_in.clone();
    const TensorView none{};
    const int64_t T = h.size(0), H = 144, I = 160, D = 72;
    const DType dt = a.qkv_weight.dtype;
    Tensor normed = Tensor::empty({T, H}, dt), qkv = Tensor::empty({T, 3 * H}, dt), attn = Tensor::empty({T, H}, dt);
    Tensor sub = Tensor::empty({T, H}, dt), inter = Tensor::empty({T, I}, dt), act = Tensor::empty({T, I}, dt);
    test::expect_ok(DeviceType::cpu, ops::LayerNormArgs{normed, h, a.norm1, a.norm1_bias, a.eps});
    test::expect_ok(DeviceType::cpu, ops::LinearArgs{qkv, normed, a.qkv_weight, a.qkv_bias, none, none});
    test::expect_ok(DeviceType::cpu, ops::RotaryEmbeddingArgs{a.positions, columns(qkv, 0, H), columns(qkv, H, H),
                                                              a.cos_sin_cache, static_cast<int32_t>(D),
                                                              ops::RopeStyle::neox});
    ops::VarlenAttentionArgs va{heads(attn, 0, H, D), heads(qkv, 0, H, D), heads(qkv, H, H, D),
                                heads(qkv, 2 * H, H, D), a.cu_seqlens, a.cu_seqlens, a.max_seqlen, a.max_seqlen,
                                static_cast<float>(1.0 / std::sqrt(72.0)), 0};
    test::expect_ok(DeviceType::cpu, va);
    test::expect_ok(DeviceType::cpu, ops::LinearArgs{sub, attn, a.proj_weight, a.proj_bias, none, none});
    test::expect_ok(DeviceType::cpu, ops::AddArgs{h, h, sub});
    test::expect_ok(DeviceType::cpu, ops::LayerNormArgs{normed, h, a.norm2, a.norm2_bias, a.eps});
    test::expect_ok(DeviceType::cpu, ops::LinearArgs{inter, normed, a.fc1_weight, a.fc1_bias, none, none});
    test::expect_ok(DeviceType::cpu, ops::GeluArgs{act, inter, ops::GeluApprox::tanh});
    test::expect_ok(DeviceType::cpu, ops::LinearArgs{sub, act, a.fc2_weight, a.fc2_bias, none, none});
    test::expect_ok(DeviceType::cpu, ops::AddArgs{h, h, sub});

    test::expect_ok(DeviceType::cpu, a);
    EXPECT_EQ(test::count_changed_bytes(c.tensors[0], h), 0) << dtype;
    EXPECT_GT(test::count_changed_bytes(c.tensors[0], hidden_in), 0) << "hidden was not updated";
    EXPECT_EQ(test::count_changed_bytes(c.tensors[3], qkv_w), 0) << "qkv_weight was written";
    EXPECT_EQ(test::count_changed_bytes(c.tensors[11], fc2_w), 0) << "fc2_weight was written";
  }
}

// Candidates for the parts reach the composed baseline, and the oracle catches a part
// dropped or swapped: the rotation left out, the rotation of interleaved pairs instead of
// halves, the residual dropped (add writes the sublayer alone), causal attention within the
// frames, the LayerNorms' bias dropped. (Exact GELU for the tanh one is not among them: the
// two differ by less than the dtype's rounding after fc2.)
fk_status rope_dropped(const void*, void*) { return FK_OK; }
fk_status rope_as_gptj(const void* args, void* stream) {
  ops::RotaryEmbeddingArgs a = *static_cast<const ops::RotaryEmbeddingArgs*>(args);
  a.style = ops::RopeStyle::gptj;
  return OpRegistry::global().baseline(ops::RotaryEmbeddingArgs::kName, DeviceType::cpu)(&a, stream);
}
fk_status residual_dropped(const void* args, void* stream) {
  ops::AddArgs a = *static_cast<const ops::AddArgs*>(args);
  Tensor zero = Tensor::zeros({a.a.shape[0], a.a.shape[1]}, a.a.dtype);
  a.a = zero.view();
  return OpRegistry::global().baseline(ops::AddArgs::kName, DeviceType::cpu)(&a, stream);
}
fk_status attention_causal(const void* args, void* stream) {
  ops::VarlenAttentionArgs a = *static_cast<const ops::VarlenAttentionArgs*>(args);
  a.causal = 1;
  return OpRegistry::global().baseline(ops::VarlenAttentionArgs::kName, DeviceType::cpu)(&a, stream);
}
fk_status norm_without_bias(const void* args, void* stream) {
  ops::LayerNormArgs a = *static_cast<const ops::LayerNormArgs*>(args);
  a.bias = TensorView{};
  return OpRegistry::global().baseline(ops::LayerNormArgs::kName, DeviceType::cpu)(&a, stream);
}

TEST(Qwen3VLVisionBlock, OracleFailsAWrongPart) {
  const uint64_t seed = test::seed_for("Qwen3VLVisionBlock.WrongPart");
  for (const char* dtype : {"f16", "bf16"}) {
    Json w = kTiny;
    w["dtype"] = dtype;
    const auto honest = bench::check_op(def(), w, seed, DeviceType::cpu);
    EXPECT_TRUE(honest.passed) << dtype << ": " << honest.message;
    const struct {
      const char* op;
      fk_op_fn fn;
    } wrong[] = {{"rotary_embedding", rope_dropped},
                 {"rotary_embedding", rope_as_gptj},
                 {"add", residual_dropped},
                 {"varlen_attention", attention_causal},
                 {"layer_norm", norm_without_bias}};
    for (const auto& [op, fn] : wrong) {
      OpRegistry::global().install(op, DeviceType::cpu, fn, "candidate:test");
      const auto r = bench::check_op(def(), w, seed, DeviceType::cpu);
      OpRegistry::global().reset(op, DeviceType::cpu);
      EXPECT_FALSE(r.passed) << dtype << ": a wrong " << op << " passed the oracle";
    }
  }
}

TEST(Qwen3VLVisionBlockErrors, NamesWhatIsWrong) {
  const uint64_t seed = test::seed_for("Qwen3VLVisionBlock.Errors");
  OpCase c = tiny_case(seed, "bf16");
  const auto good = c.as<Qwen3VLVisionBlockArgs>();
  auto bad = good;
  bad.fc1_weight = Tensor::empty({160, 143}, DType::bf16).view();
  test::expect_invalid(DeviceType::cpu, bad, "fc1_weight");
  bad = good;
  bad.num_heads = 5;
  test::expect_invalid(DeviceType::cpu, bad, "num_heads 5 must divide the hidden size 144");
  bad = good;
  bad.num_heads = 16;  // heads of 9: the rotation pairs halves
  test::expect_invalid(DeviceType::cpu, bad, "even size");
  bad = good;
  bad.max_seqlen = 20;
  test::expect_invalid(DeviceType::cpu, bad, "max_seqlen 20 is below the longest frame (24 patches)");
  bad = good;
  bad.proj_bias = Tensor::empty({144}, DType::f16).view();
  test::expect_invalid(DeviceType::cpu, bad, "proj_bias");
  bad = good;
  bad.positions = c.tensors[16].view();
  test::expect_invalid(DeviceType::cpu, bad, "positions must be [44]");
  bad = good;
  bad.cos_sin_cache = Tensor::empty({44, 64}, DType::f32).view();
  test::expect_invalid(DeviceType::cpu, bad, "cos_sin_cache must be [P, 72]");
  bad = good;
  bad.cu_seqlens_host = Tensor::empty({3}, DType::i32).view();
  test::expect_invalid(DeviceType::cpu, bad, "cu_seqlens and cu_seqlens_host");
  bad = good;
  bad.inter = Tensor::empty({10, 160}, DType::bf16).view();
  test::expect_invalid(DeviceType::cpu, bad, "inter");
  bad = good;
  bad.eps = 0;
  test::expect_invalid(DeviceType::cpu, bad, "eps must be positive");
}

}  // namespace
}  // namespace fk
