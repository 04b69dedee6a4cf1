// varlen_attention beyond the generic oracle test (which runs the op's test workloads):
// hand-computed values, an independent dense implementation written here (log-sum-exp
// softmax over an explicit mask matrix, per sequence) on random and edge shapes with the
// op's f64 output, packing (a batch equals its sequences run alone), q/k/v as slices of one
// fused qkv buffer, queries that see no key, and clear errors for bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "fk/ops/varlen_attention.h"
#include "ops/common/case_builder.h"
#include "ops/norm_act_support.h"
#include "ops/packed_lengths.h"
#include "support/test_seed.h"

namespace fk {
namespace {

using ops::VarlenAttentionArgs;
using test::expect_invalid;
using test::expect_ok;
using test::longest;
using test::offsets;
using test::total;

VarlenAttentionArgs args(const TensorView& out, const TensorView& q, const TensorView& k, const TensorView& v,
                         const Tensor& cu_q, const Tensor& cu_k, int32_t max_q, int32_t max_k, bool causal) {
  return VarlenAttentionArgs{out, q, k, v, cu_q, cu_k, max_q, max_k,
                             static_cast<float>(1.0 / std::sqrt(static_cast<double>(q.shape[2]))), causal ? 1 : 0};
}

// Dense attention of one sequence written independently of the op: an explicit mask
// matrix, softmax as exp(s - logsumexp(s)).
std::vector<double> dense_attention(const TensorView& q, const TensorView& k, const TensorView& v, int64_t q0,
                                    int64_t lq, int64_t k0, int64_t lk, int64_t h, int64_t hk, double scale,
                                    bool causal) {
  const int64_t d = q.shape[2];
  std::vector<double> out(static_cast<size_t>(lq * d), 0.0);
  for (int64_t i = 0; i < lq; ++i) {
    std::vector<double> s;
    std::vector<int64_t> keys;
    for (int64_t j = 0; j < lk; ++j) {
      // Bottom-right aligned: query i sits at key position i + (lk - lq).
      if (causal && j > i + (lk - lq)) continue;
      double dot = 0;
      for (int64_t x = 0; x < d; ++x) dot += get(q, q0 + i, h, x) * get(k, k0 + j, hk, x);
      s.push_back(dot * scale);
      keys.push_back(j);
    }
    if (s.empty()) continue;
    double mx = -std::numeric_limits<double>::infinity();
    for (double x : s) mx = std::max(mx, x);
    double sum = 0;
    for (double x : s) sum += std::exp(x - mx);
    const double lse = mx + std::log(sum);
    for (size_t n = 0; n < s.size(); ++n)
      for (int64_t x = 0; x < d; ++x)
        out[static_cast<size_t>(i * d + x)] += std::exp(s[n] - lse) * get(v, k0 + keys[n], hk, x);
  }
  return out;
}

struct Shape3 {
  std::vector<int32_t> lens_q, lens_k;
  int64_t heads, kv_heads, dim;
  bool causal;
};

void check_against_dense(const Shape3& s, DType dt, uint64_t seed) {
  const int64_t tq = total(s.lens_q), tk = total(s.lens_k);
  Tensor q = ops::random_tensor({tq, s.heads, s.dim}, dt, seed, 1, -2.f, 2.f);
  Tensor k = ops::random_tensor({tk, s.kv_heads, s.dim}, dt, seed, 2, -2.f, 2.f);
  Tensor v = ops::random_tensor({tk, s.kv_heads, s.dim}, dt, seed, 3, -1.f, 1.f);
  Tensor out = Tensor::empty({tq, s.heads, s.dim}, DType::f64);
  const Tensor cu_q = offsets(s.lens_q), cu_k = offsets(s.lens_k);
  expect_ok(DeviceType::cpu, args(out, q, k, v, cu_q, cu_k, longest(s.lens_q), longest(s.lens_k), s.causal));
  // The op's scale is a float: the same rounding here.
  const double scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.dim)));
  int64_t q0 = 0, k0 = 0, bad = 0;
  for (size_t b = 0; b < s.lens_q.size(); ++b) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const auto want = dense_attention(q, k, v, q0, s.lens_q[b], k0, s.lens_k[b], h, h / (s.heads / s.kv_heads),
                                        scale, s.causal);
      for (int64_t i = 0; i < s.lens_q[b]; ++i)
        for (int64_t x = 0; x < s.dim; ++x) {
          const double got = get(out.view(), q0 + i, h, x), e = want[static_cast<size_t>(i * s.dim + x)];
          if (!(std::fabs(got - e) <= 1e-9 + 1e-9 * std::fabs(e)) && bad++ < 5)
            ADD_FAILURE() << "sequence " << b << " head " << h << " query " << i << " dim " << x << ": " << got
                          << ", expected " << e << " (seed " << seed << ")";
        }
    }
    q0 += s.lens_q[b];
    k0 += s.lens_k[b];
  }
  EXPECT_EQ(bad, 0);
}

TEST(VarlenAttention, HandComputedValues) {
  // One sequence of two tokens, one head of dim 8 (q = e0, k0 = 0, k1 = 2 e0 * sqrt(8)),
  // scale 1/sqrt(8): logits 0 and 2, so query 0 puts weights 1/(1+e^2) and e^2/(1+e^2) on
  // the value rows 1 and 3. Causal: query 0 sees only key 0.
  Tensor q = Tensor::zeros({2, 1, 8}, DType::bf16), k = Tensor::zeros({2, 1, 8}, DType::bf16),
         v = Tensor::zeros({2, 1, 8}, DType::bf16);
  set(q.view(), 1.0, 0, 0, 0);
  set(q.view(), 1.0, 1, 0, 0);
  set(k.view(), 2.0 * std::sqrt(8.0), 1, 0, 0);  // 5.65625 in bf16
  set(v.view(), 1.0, 0, 0, 0);
  set(v.view(), 3.0, 1, 0, 0);
  const Tensor cu = offsets({2});
  const double k1 = get(k.view(), 1, 0, 0), logit = k1 * static_cast<float>(1.0 / std::sqrt(8.0));
  const double w1 = std::exp(logit) / (1 + std::exp(logit));
  for (bool causal : {false, true}) {
    Tensor out = Tensor::empty({2, 1, 8}, DType::f64);
    expect_ok(DeviceType::cpu, args(out, q, k, v, cu, cu, 2, 2, causal));
    EXPECT_NEAR(get(out.view(), 0, 0, 0), causal ? 1.0 : (1 - w1) * 1 + w1 * 3, 1e-12) << causal;
    EXPECT_NEAR(get(out.view(), 1, 0, 0), (1 - w1) * 1 + w1 * 3, 1e-12) << causal;
    EXPECT_EQ(get(out.view(), 0, 0, 1), 0.0);
  }
}

TEST(VarlenAttention, MatchesDenseAttentionOnRandomAndEdgeShapes) {
  const uint64_t seed = test::seed_for("varlen_attention_dense");
  std::mt19937_64 rng(seed);
  std::vector<Shape3> shapes = {
      {{1}, {1}, 2, 1, 64, false},
      {{1, 63, 64, 65}, {1, 63, 64, 65}, 4, 2, 64, false},
      {{3, 0, 5}, {3, 0, 5}, 2, 2, 80, false},
      {{5, 70}, {5, 70}, 4, 1, 96, true},
      {{3, 9, 8}, {10, 4, 3}, 2, 1, 64, true},  // bottom-right causal, queries without keys
      {{4, 6}, {9, 2}, 2, 2, 64, false},        // cross attention, fewer or more keys
  };
  // Random shapes: many short sequences, random GQA and head dims.
  for (int r = 0; r < 3; ++r) {
    Shape3 s;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int b = 0; b < n; ++b) s.lens_q.push_back(static_cast<int32_t>(rng() % 20));
    s.lens_k = s.lens_q;
    s.kv_heads = 1 + static_cast<int64_t>(rng() % 2);
    s.heads = s.kv_heads * (1 + static_cast<int64_t>(rng() % 3));
    s.dim = 8 * (1 + static_cast<int64_t>(rng() % 32));
    s.causal = rng() % 2 == 0;
    shapes.push_back(s);
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    SCOPED_TRACE("shape " + std::to_string(i));
    check_against_dense(shapes[i], i % 2 ? DType::f16 : DType::bf16, seed + i);
  }
}

TEST(VarlenAttention, PackedBatchEqualsSequencesAlone) {
  const uint64_t seed = test::seed_for("varlen_attention_packing");
  const std::vector<int32_t> lens = {7, 1, 12};
  const int64_t h = 2, d = 64, t = total(lens);
  Tensor q = ops::random_tensor({t, h, d}, DType::bf16, seed, 1, -2.f, 2.f);
  Tensor k = ops::random_tensor({t, h, d}, DType::bf16, seed, 2, -2.f, 2.f);
  Tensor v = ops::random_tensor({t, h, d}, DType::bf16, seed, 3, -1.f, 1.f);
  Tensor out = Tensor::empty({t, h, d}, DType::bf16);
  const Tensor cu = offsets(lens);
  expect_ok(DeviceType::cpu, args(out, q, k, v, cu, cu, longest(lens), longest(lens), false));
  int64_t start = 0;
  for (int32_t n : lens) {
    auto slice = [&](const Tensor& x) {
      TensorView s = x.view();
      s.data = s.element_ptr(start * s.strides[0]);
      s.shape[0] = n;
      return s;
    };
    Tensor alone = Tensor::empty({n, h, d}, DType::bf16);
    const Tensor one = offsets({n});
    expect_ok(DeviceType::cpu, args(alone, slice(q), slice(k), slice(v), one, one, n, n, false));
    for (int64_t i = 0; i < n * h * d; ++i)
      ASSERT_EQ(get(alone.view(), i / (h * d), (i / d) % h, i % d), get(slice(out), i / (h * d), (i / d) % h, i % d));
    start += n;
  }
}

TEST(VarlenAttention, SlicesOfAFusedQkvBufferMatchContiguous) {
  const uint64_t seed = test::seed_for("varlen_attention_fused_qkv");
  const std::vector<int32_t> lens = {5, 11};
  const int64_t hq = 4, hk = 2, d = 16, t = total(lens), width = (hq + 2 * hk) * d;
  Tensor qkv = ops::random_tensor({t, width}, DType::bf16, seed, 1, -2.f, 2.f);
  auto view_of = [&](int64_t col, int64_t heads) {
    TensorView v = qkv.view();
    v.data = v.element_ptr(col);
    v.rank = 3;
    v.shape[0] = t, v.shape[1] = heads, v.shape[2] = d;
    v.strides[0] = width, v.strides[1] = d, v.strides[2] = 1;
    return v;
  };
  const TensorView q = view_of(0, hq), k = view_of(hq * d, hk), v = view_of((hq + hk) * d, hk);
  auto copy = [](const TensorView& s) {
    Tensor c = Tensor::empty({s.shape[0], s.shape[1], s.shape[2]}, s.dtype);
    for (int64_t i = 0; i < s.shape[0]; ++i)
      for (int64_t j = 0; j < s.shape[1]; ++j)
        for (int64_t x = 0; x < s.shape[2]; ++x) set(c.view(), get(s, i, j, x), i, j, x);
    return c;
  };
  const Tensor qc = copy(q), kc = copy(k), vc = copy(v), cu = offsets(lens);
  Tensor out = Tensor::empty({t, hq, d}, DType::bf16), out_c = Tensor::empty({t, hq, d}, DType::bf16);
  expect_ok(DeviceType::cpu, args(out, q, k, v, cu, cu, 11, 11, true));
  expect_ok(DeviceType::cpu, args(out_c, qc, kc, vc, cu, cu, 11, 11, true));
  for (int64_t i = 0; i < out.numel(); ++i)
    ASSERT_EQ(load_element(static_cast<char*>(out.data()) + 2 * i, DType::bf16),
              load_element(static_cast<char*>(out_c.data()) + 2 * i, DType::bf16));
}

TEST(VarlenAttention, QueriesThatSeeNoKeyAreZero) {
  // Causal, 5 queries over 2 keys: queries 0..2 sit before the first key.
  const uint64_t seed = test::seed_for("varlen_attention_no_key");
  Tensor q = ops::random_tensor({5, 1, 8}, DType::bf16, seed, 1, -2.f, 2.f);
  Tensor k = ops::random_tensor({2, 1, 8}, DType::bf16, seed, 2, -2.f, 2.f);
  Tensor v = ops::random_tensor({2, 1, 8}, DType::bf16, seed, 3, 1.f, 2.f);  // positive: a row of zeros is no accident
  Tensor out = Tensor::empty({5, 1, 8}, DType::f64);
  expect_ok(DeviceType::cpu, args(out, q, k, v, offsets({5}), offsets({2}), 5, 2, true));
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t x = 0; x < 8; ++x) {
      if (i < 3) EXPECT_EQ(get(out.view(), i, 0, x), 0.0) << i;
      else EXPECT_GT(get(out.view(), i, 0, x), 0.9) << i;
    }
  EXPECT_EQ(get(out.view(), 3, 0, 0), get(v.view(), 0, 0, 0));  // query 3 sees key 0 only
}

TEST(VarlenAttention, UsedKeysEqualAttentionOverThoseKeysAlone) {
  // seqused_k (ColBERT's [MASK]-padded queries): every query row of sequence b attends to the
  // first used[b] keys only, which is cross-attention over a K/V holding just those rows.
  const uint64_t seed = test::seed_for("varlen_attention_seqused_k");
  const std::vector<int32_t> lens = {8, 8, 5}, used = {3, 8, 0};
  const int64_t h = 2, d = 16, t = total(lens);
  Tensor q = ops::random_tensor({t, h, d}, DType::bf16, seed, 1, -2.f, 2.f);
  Tensor k = ops::random_tensor({t, h, d}, DType::bf16, seed, 2, -2.f, 2.f);
  Tensor v = ops::random_tensor({t, h, d}, DType::bf16, seed, 3, -1.f, 1.f);
  Tensor used_t = Tensor::empty({3}, DType::i32);
  std::copy(used.begin(), used.end(), used_t.data_as<int32_t>());
  const Tensor cu = offsets(lens);
  Tensor out = Tensor::empty({t, h, d}, DType::f64);
  VarlenAttentionArgs a = args(out, q, k, v, cu, cu, 8, 8, false);
  a.seqused_k = used_t;
  expect_ok(DeviceType::cpu, a);
  // The same keys gathered into their own K/V.
  const int64_t tk = total(used);
  Tensor kk = Tensor::empty({tk, h, d}, DType::bf16), vk = Tensor::empty({tk, h, d}, DType::bf16);
  int64_t src = 0, dst = 0;
  for (size_t b = 0; b < lens.size(); ++b) {
    for (int64_t j = 0; j < used[b]; ++j, ++dst)
      for (int64_t x = 0; x < h * d; ++x) {
        set(kk.view(), get(k.view(), src + j, x / d, x % d), dst, x / d, x % d);
        set(vk.view(), get(v.view(), src + j, x / d, x % d), dst, x / d, x % d);
      }
    src += lens[b];
  }
  Tensor want = Tensor::empty({t, h, d}, DType::f64);
  expect_ok(DeviceType::cpu, args(want, q, kk, vk, cu, offsets(used), 8, 8, false));
  for (int64_t i = 0; i < t * h * d; ++i)
    ASSERT_EQ(get(out.view(), i / (h * d), (i / d) % h, i % d), get(want.view(), i / (h * d), (i / d) % h, i % d))
        << "element " << i;
  EXPECT_EQ(get(out.view(), 16, 0, 0), 0.0);  // the sequence that uses no key: zeros
}

TEST(VarlenAttentionErrors, BadUsedKeyCountsAreClearErrors) {
  const DType bf = DType::bf16;
  Tensor q = Tensor::zeros({6, 2, 8}, bf), out = Tensor::zeros({6, 2, 8}, bf);
  const Tensor cu = offsets({2, 4});
  VarlenAttentionArgs a = args(out, q, q, q, cu, cu, 4, 4, false);
  Tensor used = Tensor::empty({2}, DType::i32);
  used.data_as<int32_t>()[0] = 2, used.data_as<int32_t>()[1] = 5;
  a.seqused_k = used;
  expect_invalid(DeviceType::cpu, a, "seqused_k[1] = 5 is outside [0, 4], the keys of sequence 1");
  used.data_as<int32_t>()[1] = -1;
  expect_invalid(DeviceType::cpu, a, "seqused_k[1] = -1 is outside");
  a.seqused_k = Tensor::zeros({3}, DType::i32);
  expect_invalid(DeviceType::cpu, a, "seqused_k must be i32[2]");
  a.seqused_k = Tensor::zeros({2}, DType::i64);
  expect_invalid(DeviceType::cpu, a, "seqused_k must be i32");
}

TEST(VarlenAttentionErrors, BadArgumentsAreClearErrors) {
  const auto cpu = DeviceType::cpu;
  const DType bf = DType::bf16;
  Tensor q = Tensor::zeros({6, 4, 8}, bf), k = Tensor::zeros({6, 2, 8}, bf), v = Tensor::zeros({6, 2, 8}, bf);
  Tensor out = Tensor::zeros({6, 4, 8}, bf);
  const Tensor cu = offsets({2, 4});
  expect_ok(cpu, args(out, q, k, v, cu, cu, 4, 4, false));
  expect_invalid(cpu, args(out, q, k, v, offsets({2, 3}), cu, 4, 4, false), "cu_seqlens_q must end at the 6 packed tokens");
  expect_invalid(cpu, args(out, q, k, v, cu, cu, 3, 4, false), "sequence 1 has 4 tokens by cu_seqlens_q, more than max_seqlen_q = 3");
  expect_invalid(cpu, args(out, q, k, v, cu, cu, 4, 2, false), "more than max_seqlen_k = 2");
  Tensor decreasing = offsets({2, 4});
  decreasing.data_as<int32_t>()[1] = 7;
  expect_invalid(cpu, args(out, q, k, v, decreasing, cu, 7, 4, false), "cu_seqlens_q must not decrease");
  Tensor nonzero = offsets({2, 4});
  nonzero.data_as<int32_t>()[0] = 1;
  expect_invalid(cpu, args(out, q, k, v, nonzero, cu, 4, 4, false), "cu_seqlens_q[0] must be 0");
  expect_invalid(cpu, args(out, q, k, v, cu, offsets({6}), 4, 6, false), "cu_seqlens_k must be i32[3]");
  Tensor cu64 = Tensor::zeros({3}, DType::i64);
  expect_invalid(cpu, args(out, q, k, v, cu64, cu, 4, 4, false), "cu_seqlens_q must be i32");
  expect_invalid(cpu, args(out, q, Tensor::zeros({6, 3, 8}, bf), Tensor::zeros({6, 3, 8}, bf), cu, cu, 4, 4, false),
                 "query heads (4) must be a multiple of the key/value heads (3)");
  expect_invalid(cpu, args(out, q, Tensor::zeros({6, 2, 16}, bf), Tensor::zeros({6, 2, 16}, bf), cu, cu, 4, 4, false),
                 "k must have q's head dim 8");
  expect_invalid(cpu, args(out, q, k, Tensor::zeros({6, 2, 8}, DType::f16), cu, cu, 4, 4, false), "v must be bf16");
  expect_invalid(cpu, args(out, Tensor::zeros({6, 4, 8}, DType::f32), k, v, cu, cu, 4, 4, false),
                 "q must be one of bf16/f16");
  expect_invalid(cpu, args(Tensor::zeros({5, 4, 8}, bf), q, k, v, cu, cu, 4, 4, false), "out must have the shape of q");
  expect_invalid(cpu, args(q, q, k, v, cu, cu, 4, 4, false), "out must not overlap q");
  expect_invalid(cpu, args(out, Tensor::zeros({6, 32}, bf), k, v, cu, cu, 4, 4, false), "q must have rank 3");
  VarlenAttentionArgs bad_causal = args(out, q, k, v, cu, cu, 4, 4, false);
  bad_causal.causal = 2;
  expect_invalid(cpu, bad_causal, "causal must be 0 or 1");
}

TEST(VarlenAttentionErrors, CudaImplementationRejectsHostTensors) {
  if (!OpRegistry::global().baseline(VarlenAttentionArgs::kName, DeviceType::cuda)) GTEST_SKIP() << "CPU-only build";
  Tensor q = Tensor::zeros({2, 1, 8}, DType::bf16), out = Tensor::zeros({2, 1, 8}, DType::bf16);
  const Tensor cu = offsets({2});
  expect_invalid(DeviceType::cuda, args(out, q, q, q, cu, cu, 2, 2, false), "q must be on cuda");
}

}  // namespace
}  // namespace fk
