// MoE ops on the CPU: the references on hand-worked examples, the edge cases (one token,
// experts without tokens, every token on one expert, k = E, ties, slots routed nowhere),
// the checks that accept any valid routing / grouping and reject wrong ones, and clear
// errors for bad arguments. (Every op's test workloads also run through op_oracle_test.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "harness/check/op_check.h"
#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/moe.h"
#include "ops/moe/fused_experts_reference.h"
#include "ops/moe/moe_align.h"
#include "ops/moe/moe_case.h"
#include "ops/moe/moe_routing.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

Tensor f32_matrix(int64_t rows, int64_t cols, const std::vector<double>& v) {
  Tensor t = Tensor::empty({rows, cols}, DType::f32);
  for (int64_t i = 0; i < rows * cols; ++i) t.data_as<float>()[i] = static_cast<float>(v[static_cast<size_t>(i)]);
  return t;
}

Tensor i32_matrix(int64_t rows, int64_t cols, const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({rows, cols}, DType::i32);
  std::memcpy(t.data(), v.data(), v.size() * 4);
  return t;
}

std::string error_of(const char* op, const void* args) {
  const fk_status s = OpRegistry::global().active(op, DeviceType::cpu)(args, nullptr);
  return s == FK_OK ? "" : last_error_message();
}

// ---- routing --------------------------------------------------------------------------

struct Routed {
  Tensor weights, ids;
};

Routed topk_softmax(const Tensor& logits, int64_t k, bool renormalize) {
  Routed r{Tensor::empty({logits.size(0), k}, DType::f32), Tensor::empty({logits.size(0), k}, DType::i32)};
  call_op(MoeTopkSoftmaxArgs{r.weights, r.ids, logits, renormalize ? 1 : 0}, DeviceType::cpu, nullptr);
  return r;
}

TEST(MoeRouting, SoftmaxTopkPicksTheLargestAndRenormalises) {
  const Tensor logits = f32_matrix(1, 4, {1.0, 3.0, 2.0, 0.0});
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(2.0) + 1.0;
  const Routed plain = topk_softmax(logits, 2, false);
  EXPECT_EQ(get_index(plain.ids, 0, 0), 1);
  EXPECT_EQ(get_index(plain.ids, 0, 1), 2);
  EXPECT_NEAR(get(plain.weights, 0, 0), std::exp(3.0) / z, 1e-7);
  EXPECT_NEAR(get(plain.weights, 0, 1), std::exp(2.0) / z, 1e-7);
  const Routed norm = topk_softmax(logits, 2, true);
  EXPECT_NEAR(get(norm.weights, 0, 0), std::exp(3.0) / (std::exp(3.0) + std::exp(2.0)), 1e-7);
  EXPECT_NEAR(get(norm.weights, 0, 0) + get(norm.weights, 0, 1), 1.0, 1e-7);
}

TEST(MoeRouting, TiesGoToTheLowerExpertAndTheCheckAcceptsEitherChoice) {
  const Tensor logits = f32_matrix(1, 4, {0.5, 0.5, 0.5, 0.5});
  const Routed r = topk_softmax(logits, 2, true);
  EXPECT_EQ(get_index(r.ids, 0, 0), 0);
  EXPECT_EQ(get_index(r.ids, 0, 1), 1);
  RoutingSpec spec;
  spec.renormalize = true;
  const Tensor other_ids = i32_matrix(1, 2, {3, 2});
  const Tensor halves = f32_matrix(1, 2, {0.5, 0.5});
  EXPECT_EQ(check_routing(logits, TensorView{}, spec, halves, other_ids), "");
}

TEST(MoeRouting, CheckRejectsWrongRoutings) {
  const Tensor logits = f32_matrix(1, 4, {1.0, 3.0, 2.0, 0.0});
  RoutingSpec spec;
  spec.renormalize = true;
  const double p1 = std::exp(3.0) / (std::exp(3.0) + std::exp(2.0));
  const Tensor good_w = f32_matrix(1, 2, {p1, 1 - p1});
  EXPECT_EQ(check_routing(logits, TensorView{}, spec, good_w, i32_matrix(1, 2, {1, 2})), "");
  EXPECT_EQ(check_routing(logits, TensorView{}, spec, f32_matrix(1, 2, {1 - p1, p1}), i32_matrix(1, 2, {2, 1})), "");
  EXPECT_NE(check_routing(logits, TensorView{}, spec, good_w, i32_matrix(1, 2, {1, 0})).find("outscores"),
            std::string::npos);
  EXPECT_NE(check_routing(logits, TensorView{}, spec, good_w, i32_matrix(1, 2, {1, 1})).find("twice"),
            std::string::npos);
  EXPECT_NE(check_routing(logits, TensorView{}, spec, good_w, i32_matrix(1, 2, {1, 4})).find("outside"),
            std::string::npos);
  EXPECT_NE(check_routing(logits, TensorView{}, spec, f32_matrix(1, 2, {0.5, 0.5}), i32_matrix(1, 2, {1, 2}))
                .find("weighs"),
            std::string::npos);
  // Unwritten output (the checks' poison pattern for i32).
  EXPECT_NE(check_routing(logits, TensorView{}, spec, good_w, i32_matrix(1, 2, {1, static_cast<int32_t>(0xA5A5A5A5)})),
            "");
}

TEST(MoeRouting, SigmoidTopkUsesSigmoidScores) {
  const Tensor logits = f32_matrix(2, 3, {0.0, 2.0, -1.0, -3.0, -2.0, 4.0});
  Routed r{Tensor::empty({2, 1}, DType::f32), Tensor::empty({2, 1}, DType::i32)};
  call_op(MoeTopkSigmoidArgs{r.weights, r.ids, logits, 0}, DeviceType::cpu, nullptr);
  EXPECT_EQ(get_index(r.ids, 0, 0), 1);
  EXPECT_NEAR(get(r.weights, 0, 0), 1 / (1 + std::exp(-2.0)), 1e-7);
  EXPECT_EQ(get_index(r.ids, 1, 0), 2);
}

Routed grouped(const Tensor& logits, const Tensor& bias, int64_t k, int n_group, int topk_group, MoeScoring scoring,
               bool renormalize, float scale) {
  Routed r{Tensor::empty({logits.size(0), k}, DType::f32), Tensor::empty({logits.size(0), k}, DType::i32)};
  call_op(MoeGroupedTopkArgs{r.weights, r.ids, logits, bias.defined() ? bias.view() : TensorView{}, n_group,
                             topk_group, scoring, renormalize ? 1 : 0, scale},
          DeviceType::cpu, nullptr);
  return r;
}

TEST(MoeRouting, GroupedTopkKeepsTheBestGroupsOnly) {
  // Groups {0,1} {2,3} {4,5} {6,7}; best scores 5, 4.5, 1, 6: groups 3 and 0 are kept, so
  // expert 3 (4.5) loses to expert 0 (0) although plain top-3 would take it.
  const Tensor logits = f32_matrix(1, 8, {0, 5, 4, 4.5, 1, 1, 6, -1});
  const Routed r = grouped(logits, Tensor{}, 3, 4, 2, MoeScoring::softmax, false, 1.f);
  EXPECT_EQ(get_index(r.ids, 0, 0), 6);
  EXPECT_EQ(get_index(r.ids, 0, 1), 1);
  EXPECT_EQ(get_index(r.ids, 0, 2), 0);
  RoutingSpec spec;
  spec.n_group = 4;
  spec.topk_group = 2;
  EXPECT_EQ(check_routing(logits, TensorView{}, spec, r.weights, r.ids), "");
  // The plain top-3 is not a valid grouped routing.
  const std::vector<double> s = routing_scores({0, 5, 4, 4.5, 1, 1, 6, -1}, MoeScoring::softmax);
  const Tensor plain_w = f32_matrix(1, 3, {s[6], s[1], s[3]});
  EXPECT_NE(check_routing(logits, TensorView{}, spec, plain_w, i32_matrix(1, 3, {6, 1, 3})), "");
}

TEST(MoeRouting, CorrectionBiasChoosesButWeightsAreTheScores) {
  // DeepSeek-V3 style: sigmoid scores, groups of 4 scored by their two best s + bias.
  const Tensor logits = f32_matrix(1, 8, {2, 2, -2, -2, 0, 0, -3, -3});
  Tensor bias = Tensor::zeros({8}, DType::f32);
  bias.data_as<float>()[4] = bias.data_as<float>()[5] = 0.3f;  // group 1: 2 * 0.8 < group 0: 2 * 0.881
  Routed r = grouped(logits, bias, 2, 2, 1, MoeScoring::sigmoid, true, 2.f);
  EXPECT_EQ(get_index(r.ids, 0, 0), 0);
  EXPECT_EQ(get_index(r.ids, 0, 1), 1);
  EXPECT_NEAR(get(r.weights, 0, 0), 1.0, 1e-6);  // 0.5 after renormalisation, times 2
  bias.data_as<float>()[4] = bias.data_as<float>()[5] = 0.5f;  // group 1 now scores 2.0
  r = grouped(logits, bias, 2, 2, 1, MoeScoring::sigmoid, false, 2.f);
  EXPECT_EQ(get_index(r.ids, 0, 0), 4);
  EXPECT_EQ(get_index(r.ids, 0, 1), 5);
  EXPECT_NEAR(get(r.weights, 0, 0), 2 * 0.5, 1e-6);  // s = sigmoid(0), not s + bias
  RoutingSpec spec;
  spec.scoring = MoeScoring::sigmoid;
  spec.n_group = 2;
  spec.topk_group = 1;
  spec.routed_scaling_factor = 2;
  EXPECT_EQ(check_routing(logits, bias, spec, r.weights, r.ids), "");
}

TEST(MoeRouting, BadArgumentsAreClearErrors) {
  const Tensor logits = f32_matrix(2, 4, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor w = Tensor::empty({2, 5}, DType::f32), ids = Tensor::empty({2, 5}, DType::i32);
  MoeTopkSoftmaxArgs a{w, ids, logits, 1};
  EXPECT_NE(error_of(a.kName, &a).find("exceeds the number of experts"), std::string::npos);
  Tensor w2 = Tensor::empty({2, 2}, DType::f32), ids_f = Tensor::empty({2, 2}, DType::f32);
  MoeTopkSoftmaxArgs b{w2, ids_f, logits, 1};
  EXPECT_NE(error_of(b.kName, &b).find("topk_ids must be i32"), std::string::npos);
  Tensor ids2 = Tensor::empty({2, 2}, DType::i32);
  MoeGroupedTopkArgs g{w2, ids2, logits, TensorView{}, 3, 1, MoeScoring::sigmoid, 1, 1.f};
  EXPECT_NE(error_of(g.kName, &g).find("n_group (3)"), std::string::npos);
}

// ---- grouping -----------------------------------------------------------------------------

struct Aligned {
  Tensor sorted, experts, total;
};

Aligned align(const Tensor& ids, int E, int bs) {
  const int64_t N = ids.numel(), S = moe_align_max_padded(N, E, bs);
  Aligned r{Tensor::empty({S}, DType::i32), Tensor::empty({(S + bs - 1) / bs}, DType::i32),
            Tensor::empty({1}, DType::i32)};
  call_op(MoeAlignBlockSizeArgs{r.sorted, r.experts, r.total, ids, TensorView{}, E, bs}, DeviceType::cpu, nullptr);
  return r;
}

std::vector<int32_t> values(const Tensor& t) {
  return std::vector<int32_t>(t.data_as<int32_t>(), t.data_as<int32_t>() + t.numel());
}

TEST(MoeAlign, ReferenceLayoutOfAWorkedExample) {
  // Slots 0..5 = (t0: 1, 0), (t1: 1, 2), (t2: 0, 1); expert 3 has none; block size 4.
  const Tensor ids = i32_matrix(3, 2, {1, 0, 1, 2, 0, 1});
  const Aligned r = align(ids, 4, 4);
  EXPECT_EQ(get_index(r.total, 0), 12);
  const std::vector<int32_t> sorted = values(r.sorted);
  const std::vector<int32_t> want = {1, 4, 6, 6, 0, 2, 5, 6, 3, 6, 6, 6};
  ASSERT_GE(sorted.size(), want.size());
  EXPECT_EQ(std::vector<int32_t>(sorted.begin(), sorted.begin() + 12), want);
  for (size_t i = 12; i < sorted.size(); ++i) EXPECT_EQ(sorted[i], 6);
  const std::vector<int32_t> blocks = values(r.experts);
  EXPECT_EQ(blocks[0], 0);
  EXPECT_EQ(blocks[1], 1);
  EXPECT_EQ(blocks[2], 2);
  for (size_t b = 3; b < blocks.size(); ++b) EXPECT_EQ(blocks[b], -1);
  EXPECT_EQ(check_align(ids, 4, 4, r.sorted, r.experts, r.total), "");
}

TEST(MoeAlign, CheckAcceptsAnyOrderWithinAnExpertOnly) {
  const Tensor ids = i32_matrix(3, 2, {1, 0, 1, 2, 0, 1});
  Aligned r = align(ids, 4, 4);
  int32_t* s = r.sorted.data_as<int32_t>();
  std::swap(s[4], s[7]);  // expert 1: a sentinel first, then slots 2, 5, 0
  std::swap(s[5], s[6]);
  EXPECT_EQ(check_align(ids, 4, 4, r.sorted, r.experts, r.total), "");
  std::swap(s[0], s[5]);  // a slot of expert 0 moved into expert 1's range
  EXPECT_NE(check_align(ids, 4, 4, r.sorted, r.experts, r.total).find("expert 0"), std::string::npos);
  std::swap(s[0], s[5]);
  ASSERT_EQ(r.sorted.numel(), 18);  // N + min(E, N) * (block_size - 1)
  s[15] = 3;  // past the total: must be the sentinel
  EXPECT_NE(check_align(ids, 4, 4, r.sorted, r.experts, r.total).find("sentinel"), std::string::npos);
  s[15] = 6;
  r.experts.data_as<int32_t>()[3] = 0;
  EXPECT_NE(check_align(ids, 4, 4, r.sorted, r.experts, r.total).find("expert_ids[3]"), std::string::npos);
  r.experts.data_as<int32_t>()[3] = -1;
  r.total.data_as<int32_t>()[0] = 16;
  EXPECT_NE(check_align(ids, 4, 4, r.sorted, r.experts, r.total).find("num_tokens_post_padded"), std::string::npos);
}

TEST(MoeAlign, EdgeCases) {
  // Every token on one expert, several blocks of it.
  Aligned r = align(i32_matrix(10, 1, std::vector<int32_t>(10, 2)), 4, 4);
  EXPECT_EQ(get_index(r.total, 0), 12);
  EXPECT_EQ(values(r.experts)[0], 2);
  EXPECT_EQ(values(r.experts)[2], 2);
  // k = E: every expert gets every token.
  r = align(i32_matrix(3, 3, {2, 0, 1, 0, 1, 2, 1, 2, 0}), 3, 2);
  EXPECT_EQ(get_index(r.total, 0), 12);
  // One token, slots routed nowhere (-1 and out of range) are left out.
  const Tensor dropped = i32_matrix(1, 3, {-1, 1, 7});
  r = align(dropped, 4, 8);
  EXPECT_EQ(get_index(r.total, 0), 8);
  EXPECT_EQ(values(r.sorted)[0], 1);
  EXPECT_EQ(values(r.sorted)[1], 3);  // the sentinel is N = 3
  EXPECT_EQ(check_align(dropped, 4, 8, r.sorted, r.experts, r.total), "");
  // Block size 1: no padding at all.
  r = align(i32_matrix(2, 2, {3, 1, 1, 0}), 4, 1);
  EXPECT_EQ(get_index(r.total, 0), 4);
  EXPECT_EQ(values(r.sorted), (std::vector<int32_t>{3, 1, 2, 0}));
}

TEST(MoeAlign, TooShortOutputsAreClearErrors) {
  const Tensor ids = i32_matrix(3, 2, {1, 0, 1, 2, 0, 1});
  Tensor sorted = Tensor::empty({5}, DType::i32), experts = Tensor::empty({8}, DType::i32),
         total = Tensor::empty({1}, DType::i32);
  MoeAlignBlockSizeArgs a{sorted, experts, total, ids, TensorView{}, 4, 4};
  EXPECT_NE(error_of(a.kName, &a).find("sorted_token_ids needs at least 18"), std::string::npos);
}

TEST(MoeCase, RoutingPatterns) {
  const Tensor same = make_topk_ids(5, 3, 8, RoutingPattern::same, 1, 1);
  EXPECT_EQ(distinct_experts(same, 8), 3);
  const Tensor uniform = make_topk_ids(50, 4, 16, RoutingPattern::uniform, 1, 1);
  for (int64_t t = 0; t < 50; ++t)
    for (int64_t a = 0; a < 4; ++a)
      for (int64_t b = a + 1; b < 4; ++b) EXPECT_NE(get_index(uniform, t, a), get_index(uniform, t, b));
  const Tensor dropped = make_topk_ids(50, 4, 16, RoutingPattern::dropped, 1, 1);
  int64_t nowhere = 0;
  for (int64_t i = 0; i < 200; ++i) nowhere += dropped.data_as<int32_t>()[i] < 0;
  EXPECT_GT(nowhere, 10);
  EXPECT_LT(nowhere, 90);
}

// ---- combine and experts -----------------------------------------------------------------

TEST(MoeUnpermuteSum, WeightedRowsByInversePermutation) {
  Tensor permuted = f32_matrix(4, 2, {1, 2, 10, 20, 100, 200, 1000, 2000});
  const Tensor inv = i32_matrix(2, 2, {2, 0, 3, -1});
  const Tensor w = f32_matrix(2, 2, {0.5, 2.0, 1.0, 9.0});
  Tensor out = Tensor::empty({2, 2}, DType::f32);
  call_op(MoeUnpermuteSumArgs{out, permuted, inv, w}, DeviceType::cpu, nullptr);
  EXPECT_EQ(get(out, 0, 0), 0.5 * 100 + 2.0 * 1);
  EXPECT_EQ(get(out, 0, 1), 0.5 * 200 + 2.0 * 2);
  EXPECT_EQ(get(out, 1, 0), 1000.0);  // the -1 slot adds nothing
}

// hidden [T, H], w13 [E, 2I, H], w2 [E, H, I] (f32 tensors in bf16 slots of the op are
// not allowed, so the example uses bf16-exact values).
Tensor bf16_tensor(const Shape& shape, const std::vector<double>& v) {
  Tensor t = Tensor::empty(shape, DType::bf16);
  for (size_t i = 0; i < v.size(); ++i) store_element(t.view().element_ptr(static_cast<int64_t>(i)), DType::bf16, v[i]);
  return t;
}

double silu(double x) { return x / (1 + std::exp(-x)); }

TEST(FusedExperts, WorkedExample) {
  // H = 2, I = 1, two experts. Expert 0: gate [1, 0], up [0, 1], down [2, 3];
  // expert 1: gate [0, 1], up [1, 1], down [1, -1].
  const Tensor hidden = bf16_tensor({2, 2}, {1, 2, -1, 0.5});
  const Tensor w13 = bf16_tensor({2, 2, 2}, {1, 0, 0, 1, 0, 1, 1, 1});
  const Tensor w2 = bf16_tensor({2, 2, 1}, {2, 3, 1, -1});
  const Tensor weights = f32_matrix(2, 2, {0.5, 0.25, 1.0, 0.0});
  const Tensor ids = i32_matrix(2, 2, {0, 1, 1, -1});
  Tensor out = Tensor::empty({2, 2}, DType::f64);
  call_op(FusedExpertsArgs{out, hidden, w13, w2, {}, {}, weights, ids, {}}, DeviceType::cpu, nullptr);
  // token 0: expert 0 act = silu(1) * 2, expert 1 act = silu(2) * 3
  const double a0 = silu(1) * 2, a1 = silu(2) * 3;
  EXPECT_NEAR(get(out, 0, 0), 0.5 * 2 * a0 + 0.25 * 1 * a1, 1e-12);
  EXPECT_NEAR(get(out, 0, 1), 0.5 * 3 * a0 + 0.25 * -1 * a1, 1e-12);
  // token 1: expert 1 only (the second slot is routed nowhere): act = silu(0.5) * (-0.5)
  const double b1 = silu(0.5) * -0.5;
  EXPECT_NEAR(get(out, 1, 0), b1, 1e-12);
  EXPECT_NEAR(get(out, 1, 1), -b1, 1e-12);
}

TEST(FusedExperts, Fp8WeightsUseTheirBlockScales) {
  // H = 256 (two 128-column scale blocks), I = 1: w13 rows gate = ones, up = ones;
  // scales: gate/up rows share row block 0, columns 0..127 scale 0.5, 128..255 scale 2.
  const int64_t H = 256;
  Tensor hidden = Tensor::empty({1, H}, DType::bf16);
  for (int64_t h = 0; h < H; ++h) set(hidden, h < 128 ? 0.015625 : 0.03125, 0, h);  // exact in bf16
  Tensor w13 = Tensor::empty({1, 2, H}, DType::f8e4m3fn);
  for (int64_t i = 0; i < 2 * H; ++i) store_element(w13.view().element_ptr(i), DType::f8e4m3fn, 1.0);
  Tensor w2 = Tensor::empty({1, H, 1}, DType::f8e4m3fn);
  for (int64_t i = 0; i < H; ++i) store_element(w2.view().element_ptr(i), DType::f8e4m3fn, i < 128 ? 1.0 : -2.0);
  Tensor s13 = Tensor::empty({1, 1, 2}, DType::f32), s2 = Tensor::empty({1, 2, 1}, DType::f32);
  s13.data_as<float>()[0] = 0.5f;
  s13.data_as<float>()[1] = 2.0f;
  s2.data_as<float>()[0] = 3.0f;  // rows 0..127 of w2
  s2.data_as<float>()[1] = 0.25f;
  const Tensor weights = f32_matrix(1, 1, {1.0});
  const Tensor ids = i32_matrix(1, 1, {0});
  Tensor out = Tensor::empty({1, H}, DType::f64);
  call_op(FusedExpertsArgs{out, hidden, w13, w2, s13, s2, weights, ids, {}}, DeviceType::cpu, nullptr);
  const double g = 128 * 0.015625 * 0.5 + 128 * 0.03125 * 2.0;  // gate = up
  const double act = silu(g) * g;
  EXPECT_NEAR(get(out, 0, 0), act * 1.0 * 3.0, 1e-9);
  EXPECT_NEAR(get(out, 0, 200), act * -2.0 * 0.25, 1e-9);
}

TEST(FusedExperts, ToleranceScalesWithTheOutputs) {
  const OpDef& def = OpRegistry::global().def("fused_experts");
  const OpCase c = def.make_case({{"tokens", 16}, {"topk", 2}, {"experts", 4}, {"hidden", 64}, {"inter", 32}}, 9);
  const Tolerance t = def.tolerance(c, def.tensor_args[0], DType::bf16);
  OpCase oracle = bench::make_oracle_case(def, c);
  bench::run_oracle(def, oracle);
  double rms = 0;
  const int64_t n = oracle.tensors[0].numel();
  for (int64_t i = 0; i < n; ++i) rms += std::pow(oracle.tensors[0].data_as<double>()[i], 2);
  rms = std::sqrt(rms / static_cast<double>(n));
  // The extra absolute term is a few percent of the outputs' size: rounding room, not a
  // blanket pass.
  EXPECT_GT(t.atol, default_tolerance(DType::bf16).atol);
  EXPECT_LT(t.atol, 0.15 * rms) << "rms of outputs " << rms;
  EXPECT_GT(rms, 0.3);  // outputs well above the default atol
}

TEST(FusedExperts, CostCountsTheExpertsTouched) {
  const OpDef& def = OpRegistry::global().def("fused_experts");
  const OpCase one = def.make_case(
      {{"tokens", 8}, {"topk", 2}, {"experts", 16}, {"hidden", 64}, {"inter", 32}, {"routing", "same"}}, 1);
  const OpCost cost = def.cost(one);
  const double per_expert = (2.0 * 32 * 64 + 64 * 32) * 2;
  const double activations = 8 * 64 * 2 * 2 + 8 * 2 * 8;
  EXPECT_DOUBLE_EQ(cost.bytes, 2 * per_expert + activations);
  EXPECT_DOUBLE_EQ(cost.flops, 2.0 * 16 * 3 * 64 * 32);
}

TEST(FusedExperts, BadArgumentsAreClearErrors) {
  const OpDef& def = OpRegistry::global().def("fused_experts");
  OpCase c = def.make_case({{"tokens", 3}, {"topk", 2}, {"experts", 4}, {"hidden", 64}, {"inter", 32}}, 1);
  auto& a = c.as<FusedExpertsArgs>();
  const TensorView w2 = a.w2;
  const Tensor narrow = Tensor::empty({4, 64, 16}, DType::bf16);
  a.w2 = narrow;
  EXPECT_NE(error_of(a.kName, &a).find("w2 dimension 2 must be 32"), std::string::npos) << error_of(a.kName, &a);
  a.w2 = w2;
  const TensorView w13 = a.w13;
  a.w13.dtype = DType::f8e4m3fn;
  EXPECT_NE(error_of(a.kName, &a).find("w2 must be f8e4m3fn"), std::string::npos);
  a.w13 = w13;
  a.topk_ids.shape[0] = 2;
  a.topk_weights.shape[0] = 2;
  EXPECT_NE(error_of(a.kName, &a).find("topk_ids dimension 0 must be 3"), std::string::npos) << error_of(a.kName, &a);
}

}  // namespace
}  // namespace fk::ops
