// single_attention_pair_bias beyond the generic oracle test: a tiny example (N = 3, one
// token masked) against AlphaFold3's Algorithm 24 without conditioning written out here
// (a = LN(s); q_i = W_q a_i + b_q, k_i, v_i, g_i; b_ij = w_h . LN(z_ij);
// A_ij = softmax_j(q_i . k_j / sqrt(c) + b_ij); s_i += W_o (sigmoid(g_i) * sum_j A_ij v_j)),
// the composed baseline against the oracle on every test workload, and named errors.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/pairformer.h"
#include "harness/check/op_check.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::SingleAttentionPairBiasArgs;
using test::expect_invalid;
using test::expect_ok;

OpCase make(const Json& w, uint64_t seed) {
  return OpRegistry::global().def(SingleAttentionPairBiasArgs::kName).make_case(w, seed);
}

std::vector<double> layer_norm(std::vector<double> x, const TensorView& w, const TensorView& b) {
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= static_cast<double>(x.size());
  for (double v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size());
  for (size_t c = 0; c < x.size(); ++c) x[c] = (x[c] - mean) / std::sqrt(var + 1e-5) * get(w, c) + get(b, c);
  return x;
}

std::vector<double> literal_algorithm_24(const SingleAttentionPairBiasArgs& a) {
  const int64_t N = a.single.shape[1], Cs = a.single.shape[2], Cz = a.pair.shape[3], H = a.num_heads;
  const int64_t HD = a.w.q_weight.shape[0], D = HD / H;
  std::vector<std::vector<double>> q(N), k(N), v(N), g(N);
  for (int64_t i = 0; i < N; ++i) {
    std::vector<double> s(Cs);
    for (int64_t c = 0; c < Cs; ++c) s[c] = get(a.single, 0, i, c);
    const std::vector<double> x = layer_norm(s, a.w.ln_single_weight, a.w.ln_single_bias);
    for (int64_t o = 0; o < HD; ++o) {
      double dq = get(a.w.q_bias, o), dk = 0, dv = 0, dg = 0;
      for (int64_t c = 0; c < Cs; ++c) {
        dq += get(a.w.q_weight, o, c) * x[c];
        dk += get(a.w.kvg_weight, o, c) * x[c];
        dv += get(a.w.kvg_weight, HD + o, c) * x[c];
        dg += get(a.w.kvg_weight, 2 * HD + o, c) * x[c];
      }
      q[i].push_back(dq), k[i].push_back(dk), v[i].push_back(dv), g[i].push_back(dg);
    }
  }
  const bool masked = a.mask.data != nullptr && a.mask.numel() > 0;
  std::vector<double> out(static_cast<size_t>(N * Cs));
  for (int64_t i = 0; i < N; ++i) {
    std::vector<double> o(HD, 0.0);
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> logit(N);
      double mx = -INFINITY;
      for (int64_t j = 0; j < N; ++j) {
        std::vector<double> z(Cz);
        for (int64_t c = 0; c < Cz; ++c) z[c] = get(a.pair, 0, i, j, c);
        const std::vector<double> zn = layer_norm(z, a.w.ln_pair_weight, a.w.ln_pair_bias);
        double bij = 0, qk = 0;
        for (int64_t c = 0; c < Cz; ++c) bij += get(a.w.bias_weight, h, c) * zn[c];
        for (int64_t c = 0; c < D; ++c) qk += q[i][h * D + c] * k[j][h * D + c];
        logit[j] = !masked || get(a.mask, 0, j) != 0 ? qk / std::sqrt(static_cast<double>(D)) + bij : -INFINITY;
        mx = std::max(mx, logit[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < N; ++j) sum += std::exp(logit[j] - mx);
      for (int64_t j = 0; j < N; ++j)
        for (int64_t c = 0; c < D; ++c) o[h * D + c] += std::exp(logit[j] - mx) / sum * v[j][h * D + c];
    }
    for (int64_t c = 0; c < HD; ++c) o[c] /= 1 + std::exp(-g[i][c]);
    for (int64_t c = 0; c < Cs; ++c) {
      double s = get(a.single, 0, i, c);
      for (int64_t e = 0; e < HD; ++e) s += get(a.w.out_weight, c, e) * o[e];
      out[i * Cs + c] = s;
    }
  }
  return out;
}

TEST(SingleAttentionPairBias, TinyExampleMatchesAlgorithm24WrittenOut) {
  for (const char* dtype : {"f32", "bf16", "f16"}) {
    const Json w{{"tokens", 3}, {"c_s", 16}, {"c_z", 8}, {"heads", 2}, {"head_dim", 8}, {"lengths", {2}},
                 {"dtype", dtype}};
    OpCase c = make(w, test::seed_for("single_attention_pair_bias_tiny"));
    const auto& a = c.as<SingleAttentionPairBiasArgs>();
    const std::vector<double> want = literal_algorithm_24(a);
    expect_ok(DeviceType::cpu, a);
    const bool f32 = std::string(dtype) == "f32";
    for (int64_t i = 0; i < a.single.numel(); ++i) {
      const double got = load_element(a.single.element_ptr(i), a.single.dtype);
      EXPECT_NEAR(got, want[i], f32 ? 1e-5 * (1 + std::abs(want[i])) : 0.06 + 0.02 * std::abs(want[i]))
          << dtype << " element " << i;
    }
  }
}

TEST(SingleAttentionPairBias, ComposedBaselineMatchesOracleOnEveryTestWorkload) {
  const OpDef& def = OpRegistry::global().def(SingleAttentionPairBiasArgs::kName);
  for (const Json& w : def.test_workloads) {
    const auto r =
        bench::check_op(def, w, test::seed_for("single_attention_pair_bias_oracle" + w.dump()), DeviceType::cpu);
    EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
  }
}

TEST(SingleAttentionPairBias, NamedErrors) {
  const Json w{{"tokens", 4}, {"c_s", 16}, {"c_z", 8}, {"heads", 2}, {"head_dim", 8}};
  {
    OpCase c = make(w, 1);
    c.as<SingleAttentionPairBiasArgs>().num_heads = 3;
    expect_invalid(DeviceType::cpu, c.as<SingleAttentionPairBiasArgs>(), "q_weight must be [Hh D, Cs]");
  }
  {
    OpCase c = make(w, 1);
    Tensor pair = Tensor::empty({1, 4, 3, 8}, DType::bf16);
    c.as<SingleAttentionPairBiasArgs>().pair = pair.view();
    expect_invalid(DeviceType::cpu, c.as<SingleAttentionPairBiasArgs>(), "pair must be [1, 4, 4, Cz]");
  }
  {
    OpCase c = make(w, 1);
    Tensor mask = Tensor::zeros({1, 5}, DType::bf16);
    c.as<SingleAttentionPairBiasArgs>().mask = mask.view();
    expect_invalid(DeviceType::cpu, c.as<SingleAttentionPairBiasArgs>(), "mask must be a packed bf16[1, 4]");
  }
  {
    OpCase c = make(w, 1);
    Tensor bias = Tensor::empty({1, 2, 4, 3}, DType::bf16);
    c.as<SingleAttentionPairBiasArgs>().bias = bias.view();
    expect_invalid(DeviceType::cpu, c.as<SingleAttentionPairBiasArgs>(), "bias must be a packed bf16[1, 2, 4, 4]");
  }
  {
    OpCase c = make(w, 1);
    Tensor qb = Tensor::empty({16}, DType::f16);
    c.as<SingleAttentionPairBiasArgs>().w.q_bias = qb.view();
    expect_invalid(DeviceType::cpu, c.as<SingleAttentionPairBiasArgs>(), "q_bias must be a packed bf16[16]");
  }
}

}  // namespace
}  // namespace fk
