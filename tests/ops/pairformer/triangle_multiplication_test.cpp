// triangle_multiplication beyond the generic oracle test: a tiny example checked against the
// algorithm written out directly (token-major, no channel-major workspaces), incoming edges
// equal to outgoing edges on the transposed pair, padded tokens that cannot reach the
// structure's real pairs, and named errors (CPU implementation).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/pairformer.h"
#include "ops/norm_act_support.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::TriangleMultiplicationArgs;
using test::expect_invalid;
using test::expect_ok;

const OpDef& def() { return OpRegistry::global().def(TriangleMultiplicationArgs::kName); }

double at(const Tensor& t, int64_t i) { return load_element(t.view().element_ptr(i), t.dtype()); }
void put(Tensor& t, int64_t i, double x) { store_element(t.view().element_ptr(i), t.dtype(), x); }

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// Layer norm of one row (eps 1e-5, biased variance).
std::vector<double> layer_norm(const std::vector<double>& x, const Tensor& w, const Tensor& b) {
  const double n = static_cast<double>(x.size());
  double mean = 0, var = 0;
  for (double v : x) mean += v;
  mean /= n;
  for (double v : x) var += (v - mean) * (v - mean);
  const double rstd = 1 / std::sqrt(var / n + 1e-5);
  std::vector<double> out(x.size());
  for (size_t c = 0; c < x.size(); ++c) out[c] = (x[c] - mean) * rstd * at(w, c) + at(b, c);
  return out;
}

// Algorithms 12 / 13 as the paper writes them, one structure, everything double.
std::vector<double> expected_update(const OpCase& c) {
  const auto& a = c.as<TriangleMultiplicationArgs>();
  const Tensor &z = c.tensors[0], &mask = c.tensors[1], &ln_w = c.tensors[2], &ln_b = c.tensors[3];
  const Tensor &w_in = c.tensors[4], &ln2_w = c.tensors[5], &ln2_b = c.tensors[6], &w_out = c.tensors[7];
  const int64_t N = z.shape()[1], Cz = z.shape()[3], C = w_out.shape()[1], P = 4 * C + Cz;
  std::vector<std::vector<double>> proj(N * N);
  for (int64_t p = 0; p < N * N; ++p) {
    std::vector<double> row(Cz);
    for (int64_t ch = 0; ch < Cz; ++ch) row[ch] = at(z, p * Cz + ch);
    const std::vector<double> x = layer_norm(row, ln_w, ln_b);
    proj[p].assign(P, 0.0);
    for (int64_t o = 0; o < P; ++o)
      for (int64_t ch = 0; ch < Cz; ++ch) proj[p][o] += x[ch] * at(w_in, o * Cz + ch);
  }
  const auto m = [&](int64_t i, int64_t j) { return mask.numel() ? at(mask, i * N + j) : 1.0; };
  const auto av = [&](int64_t i, int64_t j, int64_t ch) {
    return sigmoid(proj[i * N + j][ch]) * proj[i * N + j][C + ch] * m(i, j);
  };
  const auto bv = [&](int64_t i, int64_t j, int64_t ch) {
    return sigmoid(proj[i * N + j][2 * C + ch]) * proj[i * N + j][3 * C + ch] * m(i, j);
  };
  std::vector<double> out(N * N * Cz);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j) {
      std::vector<double> t(C, 0.0);
      for (int64_t ch = 0; ch < C; ++ch)
        for (int64_t k = 0; k < N; ++k)
          t[ch] += a.incoming ? av(k, i, ch) * bv(k, j, ch) : av(i, k, ch) * bv(j, k, ch);
      const std::vector<double> tn = layer_norm(t, ln2_w, ln2_b);
      for (int64_t o = 0; o < Cz; ++o) {
        double u = 0;
        for (int64_t ch = 0; ch < C; ++ch) u += tn[ch] * at(w_out, o * C + ch);
        out[(i * N + j) * Cz + o] = at(z, (i * N + j) * Cz + o) + sigmoid(proj[i * N + j][4 * C + o]) * u;
      }
    }
  return out;
}

TEST(TriangleMultiplication, TinyExampleMatchesTheAlgorithmWrittenOut) {
  for (int incoming : {0, 1})
    for (bool masked : {false, true}) {
      SCOPED_TRACE(testing::Message() << "incoming " << incoming << ", masked " << masked);
      Json w{{"n", 3}, {"pair_channels", 4}, {"hidden", 2}, {"incoming", incoming}, {"dtype", "f32"}};
      if (masked) w["padded"] = 1;
      OpCase c = def().make_case(w, test::seed_for("tri_tiny", incoming * 2 + masked));
      const std::vector<double> want = expected_update(c);
      expect_ok(DeviceType::cpu, c.as<TriangleMultiplicationArgs>());
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_NEAR(at(c.tensors[0], static_cast<int64_t>(i)), want[i], 2e-5 * (1 + std::fabs(want[i]))) << i;
    }
}

// Pair-indexed tensor [1, N, N, W] transposed over its two token axes.
Tensor transposed(const Tensor& t) {
  const int64_t N = t.shape()[1], W = t.rank() == 4 ? t.shape()[3] : 1;
  Tensor out = t.clone();
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t c = 0; c < W; ++c) put(out, (j * N + i) * W + c, at(t, (i * N + j) * W + c));
  return out;
}

// Incoming edges: t[i, j] = sum_k a[k, i] b[k, j]. Outgoing edges on z^T with the a and b
// projections swapped give t'[i, j] = sum_k b[k, i] a[k, j] = t[j, i], written at z^T[i, j]
// = z[j, i]: the same update. The CPU baseline sums in the same order either way, so the
// results are equal bit for bit.
TEST(TriangleMultiplication, IncomingEqualsOutgoingOnTheTransposedPair) {
  for (const char* dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    const Json w{{"n", 6}, {"pair_channels", 8}, {"hidden", 4}, {"padded", 2}, {"incoming", 1}, {"dtype", dtype}};
    OpCase in = def().make_case(w, test::seed_for("tri_transpose", dtype[0]));
    OpCase out = def().make_case(w, test::seed_for("tri_transpose", dtype[0]));
    out.tensors[0] = transposed(in.tensors[0]);
    out.tensors[1] = transposed(in.tensors[1]);
    const int64_t C = 4, Cz = 8;
    const size_t half = static_cast<size_t>(2 * C * Cz) * in.tensors[4].view().element_size();
    auto* swapped = static_cast<char*>(out.tensors[4].data());
    std::memcpy(swapped, static_cast<const char*>(in.tensors[4].data()) + half, half);
    std::memcpy(swapped + half, in.tensors[4].data(), half);
    out.as<TriangleMultiplicationArgs>().incoming = 0;
    out.bind(def().tensor_args);
    expect_ok(DeviceType::cpu, in.as<TriangleMultiplicationArgs>());
    expect_ok(DeviceType::cpu, out.as<TriangleMultiplicationArgs>());
    const Tensor back = transposed(out.tensors[0]);
    for (int64_t i = 0; i < back.numel(); ++i) EXPECT_EQ(at(back, i), at(in.tensors[0], i)) << i;
  }
}

// A padded token's a and b are zero, so the pair values of padded rows and columns cannot
// change a real pair's update.
TEST(TriangleMultiplication, PaddedTokensDoNotReachRealPairs) {
  for (int incoming : {0, 1}) {
    const Json w{{"n", 7}, {"pair_channels", 8}, {"hidden", 4}, {"padded", 3}, {"incoming", incoming}};
    OpCase a = def().make_case(w, test::seed_for("tri_padded", incoming));
    OpCase b = def().make_case(w, test::seed_for("tri_padded", incoming));
    const int64_t N = 7, Cz = 8, valid = N - 3;
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j)
        if (i >= valid || j >= valid)
          for (int64_t c = 0; c < Cz; ++c) put(b.tensors[0], (i * N + j) * Cz + c, 5.0 - 0.5 * static_cast<double>(c));
    b.bind(def().tensor_args);
    expect_ok(DeviceType::cpu, a.as<TriangleMultiplicationArgs>());
    expect_ok(DeviceType::cpu, b.as<TriangleMultiplicationArgs>());
    for (int64_t i = 0; i < valid; ++i)
      for (int64_t j = 0; j < valid; ++j)
        for (int64_t c = 0; c < Cz; ++c)
          EXPECT_EQ(at(a.tensors[0], (i * N + j) * Cz + c), at(b.tensors[0], (i * N + j) * Cz + c));
  }
}

TEST(TriangleMultiplication, NamedErrors) {
  const Json w{{"n", 4}, {"pair_channels", 8}, {"hidden", 4}, {"padded", 1}, {"dtype", "f32"}};
  const auto fresh = [&] { return def().make_case(w, 1); };
  {
    OpCase c = fresh();
    c.tensors[7] = Tensor::empty({8, 6}, DType::f32);  // out_weight of C = 6 against in_weight's C = 4
    c.bind(def().tensor_args);
    expect_invalid(DeviceType::cpu, c.as<TriangleMultiplicationArgs>(), "C does not match between in_weight");
  }
  {
    OpCase c = fresh();
    c.tensors[1] = Tensor::empty({1, 4, 3}, DType::f32);
    c.bind(def().tensor_args);
    expect_invalid(DeviceType::cpu, c.as<TriangleMultiplicationArgs>(), "mask must be [1, 4, 4]");
  }
  {
    OpCase c = fresh();
    c.tensors[0] = Tensor::empty({1, 4, 5, 8}, DType::f32);
    c.bind(def().tensor_args);
    expect_invalid(DeviceType::cpu, c.as<TriangleMultiplicationArgs>(), "pair must be [B, N, N, Cz]");
  }
  {
    OpCase c = fresh();
    c.tensors[4] = Tensor::empty({23, 8}, DType::f32);
    c.bind(def().tensor_args);
    expect_invalid(DeviceType::cpu, c.as<TriangleMultiplicationArgs>(), "in_weight must be [4 C + 8, 8]");
  }
  {
    OpCase c = fresh();
    c.tensors[10] = Tensor::empty({1, 4, 4, 4}, DType::f16);
    c.bind(def().tensor_args);
    expect_invalid(DeviceType::cpu, c.as<TriangleMultiplicationArgs>(), "left");
  }
  {
    OpCase c = fresh();
    c.as<TriangleMultiplicationArgs>().incoming = 2;
    expect_invalid(DeviceType::cpu, c.as<TriangleMultiplicationArgs>(), "incoming must be 0");
  }
}

}  // namespace
}  // namespace fk
