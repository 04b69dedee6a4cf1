// pairformer_block beyond the generic oracle test: its CPU baseline is its seven parts
// called one by one (bit for bit), the oracle is the parts' references in the same order,
// padded tokens change nothing of the real tokens' outputs, and bad arguments are named.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/pairformer_block.h"
#include "fk/random.h"
#include "ops/pairformer/pairformer_block_parts.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::PairformerBlockArgs;

const OpDef& def() { return OpRegistry::global().def(PairformerBlockArgs::kName); }

Json workload(const char* dtype, int64_t batch, int64_t tokens, std::vector<int64_t> lengths) {
  Json w{{"batch", batch},       {"tokens", tokens},     {"c_s", 24},          {"c_z", 16},
         {"c_mul", 8},           {"tri_heads", 2},       {"tri_head_dim", 4},  {"single_heads", 3},
         {"single_head_dim", 8}, {"transition_factor", 2}, {"dtype", dtype}};
  if (!lengths.empty()) w["lengths"] = lengths;
  return w;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.view().span_bytes() == b.view().span_bytes() &&
         std::memcmp(a.data(), b.data(), static_cast<size_t>(a.view().span_bytes())) == 0;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(PairformerBlock, IsItsPartsOneByOne) {
  const uint64_t seed = test::seed_for("PairformerBlock.Parts");
  for (const char* dtype : {"f32", "bf16", "f16"}) {
    OpCase c = def().make_case(workload(dtype, 2, 7, {7, 5}), seed);
    const auto& a = c.as<PairformerBlockArgs>();
    const Tensor s = c.tensors[0].clone(), z = c.tensors[1].clone();
    const Tensor s_in = s.clone(), z_in = z.clone();
    const Tensor weight_before = c.tensors[6].clone();
    test::run_pairformer_block_parts(s, z, a.single_mask, a.pair_mask, a.w, a.tri_heads, a.single_heads,
                                     test::PartsPath::registry);
    call_op(a, DeviceType::cpu, nullptr);
    EXPECT_TRUE(same_bytes(c.tensors[0], s)) << dtype << ": single";
    EXPECT_TRUE(same_bytes(c.tensors[1], z)) << dtype << ": pair";
    EXPECT_TRUE(same_bytes(c.tensors[6], weight_before)) << dtype << ": a weight was written";
    // Something happened: the block is not the identity.
    EXPECT_FALSE(same_bytes(s, s_in)) << dtype;
    EXPECT_FALSE(same_bytes(z, z_in)) << dtype;
  }
}

// The oracle (f64 single and pair) is the parts' references in order, and the dtype's
// baseline is within the definition's tolerance of it.
TEST(PairformerBlock, OracleIsThePartsReferences) {
  const uint64_t seed = test::seed_for("PairformerBlock.Oracle");
  OpCase c = def().make_case(workload("bf16", 1, 6, {4}), seed);
  auto& a = c.as<PairformerBlockArgs>();
  auto f64 = [](const Tensor& t) {
    Tensor o = Tensor::empty(t.shape(), DType::f64);
    for (int64_t i = 0; i < t.numel(); ++i)
      static_cast<double*>(o.data())[i] = load_element(static_cast<const char*>(t.data()) + i * t.view().element_size(), t.dtype());
    return o;
  };
  const Tensor s64 = f64(c.tensors[0]), z64 = f64(c.tensors[1]);
  const Tensor s_parts = s64.clone(), z_parts = z64.clone();
  test::run_pairformer_block_parts(s_parts, z_parts, a.single_mask, a.pair_mask, a.w, a.tri_heads, a.single_heads,
                                   test::PartsPath::cpu_references);
  PairformerBlockArgs o = a;
  o.single = s64, o.pair = z64;
  call_op(o, DeviceType::cpu, nullptr);
  EXPECT_TRUE(same_bytes(s64, s_parts));
  EXPECT_TRUE(same_bytes(z64, z_parts));
  // The bf16 baseline against it, within the definition's tolerance.
  call_op(a, DeviceType::cpu, nullptr);
  const Tolerance tol = def().tolerance(c, def().tensor_args[1], DType::bf16);
  double worst = 0;
  for (int64_t i = 0; i < z64.numel(); ++i) {
    const double ref = static_cast<const double*>(z64.data())[i];
    const double got = load_element(static_cast<const char*>(c.tensors[1].data()) + i * 2, DType::bf16);
    worst = std::max(worst, std::abs(got - ref) / (tol.atol + tol.rtol * std::abs(ref)));
  }
  EXPECT_LE(worst, 1.0);
}

// A padded token's inputs reach no real token's outputs.
TEST(PairformerBlock, PaddingDoesNotReachRealTokens) {
  const uint64_t seed = test::seed_for("PairformerBlock.Padding");
  const int64_t N = 8, L = 5, Cs = 24, Cz = 16;
  OpCase c = def().make_case(workload("f32", 1, N, {L}), seed);
  const Tensor s0 = c.tensors[0].clone(), z0 = c.tensors[1].clone();
  auto& a = c.as<PairformerBlockArgs>();
  call_op(a, DeviceType::cpu, nullptr);
  const Tensor s1 = c.tensors[0].clone(), z1 = c.tensors[1].clone();
  // Other values at every padded row and column.
  Tensor noise = Tensor::empty({N, N, Cz}, DType::f32);
  fill_uniform(noise, seed, 99, -5.f, 5.f);
  c.tensors[0].copy_from(s0);
  c.tensors[1].copy_from(z0);
  for (int64_t i = 0; i < N; ++i) {
    for (int64_t ch = 0; ch < Cs; ++ch)
      if (i >= L) set(c.tensors[0].view(), get(noise.view(), i, 0, ch % Cz) * 3, 0, i, ch);
    for (int64_t j = 0; j < N; ++j)
      if (i >= L || j >= L)
        for (int64_t ch = 0; ch < Cz; ++ch) set(c.tensors[1].view(), get(noise.view(), i, j, ch), 0, i, j, ch);
  }
  call_op(a, DeviceType::cpu, nullptr);
  for (int64_t i = 0; i < L; ++i) {
    for (int64_t ch = 0; ch < Cs; ++ch)
      ASSERT_EQ(get(c.tensors[0].view(), 0, i, ch), get(s1.view(), 0, i, ch)) << "s token " << i;
    for (int64_t j = 0; j < L; ++j)
      for (int64_t ch = 0; ch < Cz; ++ch)
        ASSERT_EQ(get(c.tensors[1].view(), 0, i, j, ch), get(z1.view(), 0, i, j, ch)) << "z " << i << ", " << j;
  }
}

TEST(PairformerBlock, BadArgumentsAreNamed) {
  const uint64_t seed = test::seed_for("PairformerBlock.Errors");
  OpCase c = def().make_case(workload("bf16", 1, 5, {}), seed);
  const auto& a = c.as<PairformerBlockArgs>();
  {
    PairformerBlockArgs b = a;
    b.workspace.shape[0] -= 1;
    EXPECT_NE(error_of([&] { call_op(b, DeviceType::cpu, nullptr); }).find("workspace must be a contiguous bf16[W]"),
              std::string::npos);
  }
  {
    PairformerBlockArgs b = a;
    b.single.shape[1] = 4;
    EXPECT_NE(error_of([&] { call_op(b, DeviceType::cpu, nullptr); }).find("single must be [1, 5, Cs]"),
              std::string::npos);
  }
  {
    PairformerBlockArgs b = a;
    b.tri_heads = 3;
    EXPECT_NE(error_of([&] { call_op(b, DeviceType::cpu, nullptr); }).find("tri_heads 3 must be positive and divide"),
              std::string::npos);
  }
  {
    PairformerBlockArgs b = a;
    b.single_heads = 0;
    EXPECT_NE(error_of([&] { call_op(b, DeviceType::cpu, nullptr); }).find("single_heads 0"), std::string::npos);
  }
  {
    PairformerBlockArgs b = a;
    b.w.tri_mul_in.out_weight.shape[1] = 3;
    EXPECT_NE(error_of([&] { call_op(b, DeviceType::cpu, nullptr); }).find("tri_mul_out.out_weight and tri_mul_in"),
              std::string::npos);
  }
  {
    Tensor mask = Tensor::zeros({1, 4}, DType::bf16);
    PairformerBlockArgs b = a;
    b.single_mask = mask;
    EXPECT_NE(error_of([&] { call_op(b, DeviceType::cpu, nullptr); }).find("single_mask must be [1, 5]"),
              std::string::npos);
  }
}

TEST(PairformerBlock, WorkspaceCoversEveryPart) {
  // The largest part sets the size: at OpenFold3's widths, the triangle multiplication.
  ops::PairformerBlockDims d;
  d.batch = 1, d.tokens = 384, d.c_s = 384, d.c_z = 128, d.c_mul = 128, d.tri_heads = 4, d.tri_head_dim = 32;
  d.single_heads = 16, d.single_head_dim = 24, d.pair_hidden = 512, d.single_hidden = 1536;
  const int64_t pairs = 384 * 384;
  EXPECT_GE(ops::pairformer_block_workspace_elements(d), pairs * (2 * 128 + 4 * 128 + 128 + 3 * 128));
  EXPECT_EQ(ops::pairformer_block_workspace_elements(d) % ops::kPairformerWorkspaceAlign, 0);
}

}  // namespace
}  // namespace fk
