// triangle_attention beyond the generic oracle test: a tiny example (N = 3) against
// AlphaFold3's Algorithms 14 and 15 written out literally here (a_ijk = softmax_k(q_ij .
// k_ik / sqrt(c) + b_jk), o_ij = g_ij * sum_k a_ijk v_ik; the ending node with k_kj, b_ki,
// v_kj), with a masked token; the ending node on z equals the starting node on z's
// transpose, written back transposed (the header's definition); the composed baseline
// against the oracle on every test workload; named errors.
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

using ops::TriangleAttentionArgs;
using test::expect_invalid;
using test::expect_ok;

OpCase make(const Json& w, uint64_t seed) {
  return OpRegistry::global().def(TriangleAttentionArgs::kName).make_case(w, seed);
}

// Algorithms 14 / 15 in double from the case's inputs (z [1, N, N, Cz], mask optional).
std::vector<double> literal_triangle_attention(const TriangleAttentionArgs& a, bool ending) {
  const int64_t N = a.pair.shape[1], Cz = a.pair.shape[3], H = a.num_heads;
  const int64_t D = a.w.qkvg_weight.shape[0] / (4 * H), HD = H * D;
  auto idx = [&](int64_t i, int64_t j) { return i * N + j; };
  std::vector<std::vector<double>> x(static_cast<size_t>(N * N)), proj(x.size()), b(x.size());
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      std::vector<double> z(static_cast<size_t>(Cz));
      double mean = 0, var = 0;
      for (int64_t c = 0; c < Cz; ++c) mean += (z[c] = get(a.pair, 0, i, j, c));
      mean /= Cz;
      for (int64_t c = 0; c < Cz; ++c) var += (z[c] - mean) * (z[c] - mean);
      var /= Cz;
      auto& xi = x[idx(i, j)];
      for (int64_t c = 0; c < Cz; ++c)
        xi.push_back((z[c] - mean) / std::sqrt(var + 1e-5) * get(a.w.ln_weight, c) + get(a.w.ln_bias, c));
      for (int64_t o = 0; o < 4 * HD; ++o) {
        double s = 0;
        for (int64_t c = 0; c < Cz; ++c) s += get(a.w.qkvg_weight, o, c) * xi[c];
        proj[idx(i, j)].push_back(s);
      }
      for (int64_t h = 0; h < H; ++h) {
        double s = 0;
        for (int64_t c = 0; c < Cz; ++c) s += get(a.w.bias_weight, h, c) * xi[c];
        b[idx(i, j)].push_back(s);
      }
    }
  const bool masked = a.mask.data != nullptr && a.mask.numel() > 0;
  std::vector<double> out(static_cast<size_t>(N * N * Cz));
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      std::vector<double> o(static_cast<size_t>(HD), 0.0);
      for (int64_t h = 0; h < H; ++h) {
        std::vector<double> logit(static_cast<size_t>(N));
        double mx = -INFINITY;
        for (int64_t k = 0; k < N; ++k) {
          const int64_t key = ending ? idx(k, j) : idx(i, k);  // k_ik (14) or k_kj (15)
          const bool visible = !masked || (ending ? get(a.mask, 0, k, j) : get(a.mask, 0, i, k)) != 0;
          double qk = 0;
          for (int64_t c = 0; c < D; ++c) qk += proj[idx(i, j)][h * D + c] * proj[key][HD + h * D + c];
          logit[k] = visible ? qk / std::sqrt(static_cast<double>(D)) + (ending ? b[idx(k, i)][h] : b[idx(j, k)][h])
                             : -INFINITY;
          mx = std::max(mx, logit[k]);
        }
        if (mx == -INFINITY) continue;
        double sum = 0;
        for (int64_t k = 0; k < N; ++k) sum += std::exp(logit[k] - mx);
        for (int64_t k = 0; k < N; ++k) {
          const double p = std::exp(logit[k] - mx) / sum;
          const int64_t key = ending ? idx(k, j) : idx(i, k);
          for (int64_t c = 0; c < D; ++c) o[h * D + c] += p * proj[key][2 * HD + h * D + c];
        }
      }
      for (int64_t c = 0; c < HD; ++c) o[c] *= 1 / (1 + std::exp(-proj[idx(i, j)][3 * HD + c]));
      for (int64_t c = 0; c < Cz; ++c) {
        double s = 0;
        for (int64_t e = 0; e < HD; ++e) s += get(a.w.out_weight, c, e) * o[e];
        out[idx(i, j) * Cz + c] = get(a.pair, 0, i, j, c) + s;
      }
    }
  return out;
}

TEST(TriangleAttention, TinyExampleMatchesTheAlgorithmsWrittenOut) {
  for (int ending = 0; ending < 2; ++ending)
    for (const char* dtype : {"f32", "bf16"}) {
      // N = 3 with token 2 masked out; 2 heads of 8.
      const Json w{{"tokens", 3}, {"c_z", 8},          {"heads", 2},      {"head_dim", 8},
                   {"ending", ending}, {"lengths", {2}}, {"dtype", dtype}};
      OpCase c = make(w, test::seed_for("triangle_attention_tiny", static_cast<uint64_t>(ending)));
      const auto& a = c.as<TriangleAttentionArgs>();
      const std::vector<double> want = literal_triangle_attention(a, ending != 0);
      expect_ok(DeviceType::cpu, a);
      const bool f32 = std::string(dtype) == "f32";
      for (int64_t i = 0; i < a.pair.numel(); ++i) {
        const double got = load_element(a.pair.element_ptr(i), a.pair.dtype);
        // f32: the oracle path, one rounding; bf16: the composed baseline's roundings.
        EXPECT_NEAR(got, want[i], f32 ? 1e-5 * (1 + std::abs(want[i])) : 0.06 + 0.02 * std::abs(want[i]))
            << dtype << " ending " << ending << " element " << i;
      }
    }
}

// z^T: pair (i, j) <- pair (j, i) of each structure, as a new tensor.
Tensor transposed_pair(const TensorView& z) {
  const int64_t B = z.shape[0], N = z.shape[1], C = z.rank == 4 ? z.shape[3] : 1;
  Tensor t = Tensor::empty(Shape(z.shape, z.shape + z.rank), z.dtype);
  const size_t es = dtype_size(z.dtype);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j)
        std::memcpy(static_cast<char*>(t.data()) + static_cast<size_t>(((b * N + i) * N + j) * C) * es,
                    static_cast<const char*>(z.data) + static_cast<size_t>(((b * N + j) * N + i) * C) * es,
                    static_cast<size_t>(C) * es);
  return t;
}

TEST(TriangleAttention, EndingNodeIsTheStartingNodeOnTheTransposedPair) {
  for (const char* dtype : {"bf16", "f16", "f32"}) {
    const Json w{{"batch", 2},   {"tokens", 6},          {"c_z", 16},       {"heads", 2},
                 {"head_dim", 8}, {"lengths", {6, 4}}, {"dtype", dtype}};
    const uint64_t seed = test::seed_for("triangle_attention_transpose");
    Json we = w;
    we["ending"] = 1;
    OpCase end = make(we, seed), start = make(w, seed);
    auto& s = start.as<TriangleAttentionArgs>();
    // The starting node's case on z^T and mask^T (same weights: same seed).
    Tensor zt = transposed_pair(s.pair), mt = transposed_pair(s.mask);
    s.pair = zt.view();
    s.mask = mt.view();
    expect_ok(DeviceType::cpu, end.as<TriangleAttentionArgs>());
    expect_ok(DeviceType::cpu, s);
    const Tensor back = transposed_pair(zt.view());
    const TensorView ze = end.as<TriangleAttentionArgs>().pair;
    ASSERT_EQ(back.nbytes(), ze.span_bytes());
    EXPECT_EQ(std::memcmp(back.data(), ze.data, back.nbytes()), 0) << dtype << ": not bit for bit";
  }
}

TEST(TriangleAttention, ComposedBaselineMatchesOracleOnEveryTestWorkload) {
  const OpDef& def = OpRegistry::global().def(TriangleAttentionArgs::kName);
  for (const Json& w : def.test_workloads) {
    const auto r = bench::check_op(def, w, test::seed_for("triangle_attention_oracle" + w.dump()), DeviceType::cpu);
    EXPECT_TRUE(r.passed) << w.dump() << ": " << r.message;
  }
}

TEST(TriangleAttention, NamedErrors) {
  const Json w{{"tokens", 4}, {"c_z", 8}, {"heads", 2}, {"head_dim", 8}};
  {
    OpCase c = make(w, 1);
    c.as<TriangleAttentionArgs>().num_heads = 3;
    expect_invalid(DeviceType::cpu, c.as<TriangleAttentionArgs>(), "qkvg_weight must be [4 Hh D, Cz]");
  }
  {
    OpCase c = make(w, 1);
    c.as<TriangleAttentionArgs>().ending = 2;
    expect_invalid(DeviceType::cpu, c.as<TriangleAttentionArgs>(), "ending must be 0");
  }
  {
    OpCase c = make(w, 1);
    Tensor small = Tensor::empty({4, 3, 2, 8}, DType::bf16);
    c.as<TriangleAttentionArgs>().q = small.view();
    expect_invalid(DeviceType::cpu, c.as<TriangleAttentionArgs>(), "q must be a packed bf16[4, 4, 2, 8]");
  }
  {
    OpCase c = make(w, 1);
    Tensor mask = Tensor::zeros({1, 4, 5}, DType::bf16);
    c.as<TriangleAttentionArgs>().mask = mask.view();
    expect_invalid(DeviceType::cpu, c.as<TriangleAttentionArgs>(), "mask must be a packed bf16[1, 4, 4]");
  }
  {
    OpCase c = make(w, 1);
    Tensor ow = Tensor::empty({8, 8}, DType::f16);
    c.as<TriangleAttentionArgs>().w.out_weight = ow.view();
    expect_invalid(DeviceType::cpu, c.as<TriangleAttentionArgs>(), "out_weight must be a packed bf16[8, 16]");
  }
  {
    OpCase c = make(w, 1);
    Tensor pair = Tensor::empty({1, 4, 5, 8}, DType::bf16);
    c.as<TriangleAttentionArgs>().pair = pair.view();
    expect_invalid(DeviceType::cpu, c.as<TriangleAttentionArgs>(), "pair must be [B, N, N, Cz]");
  }
}

}  // namespace
}  // namespace fk
