// linear: the CPU reference on hand-checked values, strided views, fp8 scales,
// argument errors, the tolerance model and the cuBLASLt algorithm cache (CPU side).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/linear.h"
#include "ops/linear/linear_algo_cache.h"
#include "ops/linear/linear_tolerance.h"

namespace fk::ops {
namespace {

Tensor matrix(const std::vector<std::vector<double>>& rows, DType dt) {
  Tensor t = Tensor::empty({static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())}, dt);
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t c = 0; c < rows[r].size(); ++c) set(t.view(), rows[r][c], r, c);
  return t;
}
Tensor vec(const std::vector<double>& v, DType dt) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, dt);
  for (size_t i = 0; i < v.size(); ++i) set(t.view(), v[i], i);
  return t;
}

fk_status run_cpu(const LinearArgs& a) { return OpRegistry::global().baseline("linear", DeviceType::cpu)(&a, nullptr); }

void expect_error(const LinearArgs& a, const std::string& needle) {
  EXPECT_EQ(run_cpu(a), FK_ERR_INVALID_ARGUMENT) << "expected an error mentioning: " << needle;
  EXPECT_NE(std::string(last_error_message()).find(needle), std::string::npos) << last_error_message();
}

TEST(Linear, HandCheckedWithBias) {
  Tensor in = matrix({{1, 2, 3}, {4, 5, 6}}, DType::bf16);
  Tensor w = matrix({{1, 0, -1}, {0.5, 0.5, 0.5}}, DType::bf16);
  Tensor b = vec({1, -1}, DType::bf16);
  Tensor out = Tensor::empty({2, 2}, DType::bf16);
  LinearArgs a{out, in, w, b, {}, {}};
  ASSERT_EQ(run_cpu(a), FK_OK) << last_error_message();
  EXPECT_EQ(get(out.view(), 0, 0), -1);
  EXPECT_EQ(get(out.view(), 0, 1), 2);
  EXPECT_EQ(get(out.view(), 1, 0), -1);
  EXPECT_EQ(get(out.view(), 1, 1), 6.5);
  a.bias = {};  // absent: no bias
  ASSERT_EQ(run_cpu(a), FK_OK) << last_error_message();
  EXPECT_EQ(get(out.view(), 1, 1), 7.5);
}

TEST(Linear, Fp8ScalesMultiplyBeforeTheBias) {
  Tensor in = matrix({{1, 2, 0.5}}, DType::f8e4m3fn);
  Tensor w = matrix({{2, -1, 4}}, DType::f8e4m3fn);
  Tensor sa = vec({0.5}, DType::f32), sb = vec({4}, DType::f32);
  Tensor b = vec({0.25}, DType::bf16);
  Tensor out = Tensor::empty({1, 1}, DType::bf16);
  LinearArgs a{out, in, w, b, sa, sb};
  ASSERT_EQ(run_cpu(a), FK_OK) << last_error_message();
  EXPECT_EQ(get(out.view(), 0, 0), 0.5 * 4 * (2 - 2 + 2) + 0.25);
}

TEST(Linear, LargeTileAndEdgesMatchANaiveLoop) {
  const int64_t M = 7, N = 9, K = 13;  // full 4x4 tiles plus ragged edges
  Tensor in = Tensor::empty({M, K}, DType::bf16), w = Tensor::empty({N, K}, DType::bf16);
  for (int64_t i = 0; i < M * K; ++i) store_element(in.view().element_ptr(i), DType::bf16, (i % 11) - 5);
  for (int64_t i = 0; i < N * K; ++i) store_element(w.view().element_ptr(i), DType::bf16, (i % 7) * 0.5 - 1);
  Tensor out = Tensor::empty({M, N}, DType::f64);  // the oracle's dtype: no output rounding
  LinearArgs a{out, in, w, {}, {}, {}};
  ASSERT_EQ(run_cpu(a), FK_OK) << last_error_message();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += get(in.view(), m, k) * get(w.view(), n, k);
      EXPECT_EQ(get(out.view(), m, n), s) << m << " " << n;
    }
}

// A slice of a wider buffer (row stride > K), as the engine passes slices of fused outputs.
TEST(Linear, StridedRowsEqualContiguous) {
  const int64_t M = 5, N = 6, K = 8, ld = 20;
  Tensor wide = Tensor::empty({M, ld}, DType::bf16);
  Tensor in = Tensor::empty({M, K}, DType::bf16);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < ld; ++k) {
      set(wide.view(), (m * 3 + k) % 5 - 2.0, m, k);
      if (k >= 4 && k < 4 + K) set(in.view(), (m * 3 + k) % 5 - 2.0, m, k - 4);
    }
  TensorView slice = wide.view();
  slice.data = wide.view().element_ptr(4);
  slice.shape[1] = K;
  Tensor w = Tensor::empty({N, K}, DType::bf16);
  for (int64_t i = 0; i < N * K; ++i) store_element(w.view().element_ptr(i), DType::bf16, i % 3 - 1.0);
  Tensor out1 = Tensor::empty({M, N}, DType::bf16), out2 = Tensor::empty({M, N}, DType::bf16);
  ASSERT_EQ(run_cpu(LinearArgs{out1, in, w, {}, {}, {}}), FK_OK) << last_error_message();
  ASSERT_EQ(run_cpu(LinearArgs{out2, slice, w, {}, {}, {}}), FK_OK) << last_error_message();
  for (int64_t i = 0; i < M * N; ++i)
    EXPECT_EQ(load_element(out1.view().element_ptr(i), DType::bf16), load_element(out2.view().element_ptr(i), DType::bf16));
}

TEST(Linear, BadArgumentsAreClearErrors) {
  Tensor in = Tensor::zeros({2, 8}, DType::bf16), w = Tensor::zeros({4, 8}, DType::bf16);
  Tensor out = Tensor::zeros({2, 4}, DType::bf16);
  Tensor w_bad_k = Tensor::zeros({4, 6}, DType::bf16);
  expect_error({out, in, w_bad_k, {}, {}, {}}, "weight dimension 1 must be 8");
  Tensor out_f16 = Tensor::zeros({2, 4}, DType::f16);
  expect_error({out_f16, in, w, {}, {}, {}}, "out must be bf16");
  Tensor out_shape = Tensor::zeros({2, 5}, DType::bf16);
  expect_error({out_shape, in, w, {}, {}, {}}, "out dimension 1 must be 4");
  Tensor bias_bad = Tensor::zeros({5}, DType::bf16);
  expect_error({out, in, w, bias_bad, {}, {}}, "bias dimension 0 must be 4");
  Tensor bias_f32 = Tensor::zeros({4}, DType::f32);
  expect_error({out, in, w, bias_f32, {}, {}}, "bias must be bf16");
  Tensor scale = Tensor::zeros({1}, DType::f32);
  expect_error({out, in, w, {}, scale, scale}, "fp8 input only");
  Tensor in8 = Tensor::zeros({2, 8}, DType::f8e4m3fn), w8 = Tensor::zeros({4, 8}, DType::f8e4m3fn);
  expect_error({out, in8, w8, {}, {}, {}}, "needs scale_a and scale_b");
  Tensor two = Tensor::zeros({2}, DType::f32);
  expect_error({out, in8, w8, {}, two, scale}, "scale_a must hold one element");
  expect_error({out, in8, w, {}, scale, scale}, "weight must be f8e4m3fn");
  Tensor in32 = Tensor::zeros({2, 8}, DType::f32);
  expect_error({out, in32, w, {}, {}, {}}, "input must be one of bf16/f16/f8e4m3fn");
  Tensor in_k0 = Tensor::zeros({2, 0}, DType::bf16), w_k0 = Tensor::zeros({4, 0}, DType::bf16);
  expect_error({out, in_k0, w_k0, {}, {}, {}}, "K (input features) must be positive");
  TensorView overlap = in.view();
  overlap.strides[0] = 4;
  expect_error({out, overlap, w, {}, {}, {}}, "rows overlap");
  TensorView cols = in.view();
  cols.strides[1] = 2;
  expect_error({out, cols, w, {}, {}, {}}, "contiguous last dimension");
  TensorView on_gpu = in.view();
  on_gpu.device = Device::cuda(0);
  expect_error({out, on_gpu, w, {}, {}, {}}, "input must be on cpu");
}

TEST(Linear, NoTokensIsANoOp) {
  Tensor in = Tensor::zeros({0, 8}, DType::bf16), w = Tensor::zeros({4, 8}, DType::bf16);
  Tensor out = Tensor::zeros({0, 4}, DType::bf16);
  EXPECT_EQ(run_cpu({out, in, w, {}, {}, {}}), FK_OK) << last_error_message();
}

TEST(LinearTolerance, AbsoluteTermGrowsWithTheDotProduct) {
  auto tol_for = [](int64_t K, DType dt) {
    Tensor in = Tensor::empty({4, K}, dt), w = Tensor::empty({4, K}, dt);
    for (int64_t i = 0; i < 4 * K; ++i) {
      store_element(in.view().element_ptr(i), dt, i % 2 ? 1.0 : -1.0);
      store_element(w.view().element_ptr(i), dt, 1.0);
    }
    Tensor s = vec({1.0}, DType::f32);
    const bool fp8 = dt == DType::f8e4m3fn;
    LinearArgs a{Tensor::empty({4, 4}, DType::bf16), in, w, {}, fp8 ? s.view() : TensorView{}, fp8 ? s.view() : TensorView{}};
    return linear_tolerance(a, DType::bf16);
  };
  const Tolerance base = default_tolerance(DType::bf16);
  const Tolerance t16 = tol_for(64, DType::bf16), t16_big = tol_for(16384, DType::bf16);
  EXPECT_EQ(t16.rtol, base.rtol);
  EXPECT_GT(t16_big.atol, t16.atol);
  EXPECT_LT(t16_big.atol, base.atol * 1.5);  // fp32 accumulation error is small next to bf16 output rounding
  const Tolerance t8 = tol_for(512, DType::f8e4m3fn), t8_big = tol_for(8192, DType::f8e4m3fn);
  // typical |out| = sqrt(K): atol - base = 4 * 2^-13 * sqrt(K / 32) * sqrt(K)
  EXPECT_NEAR(t8.atol - base.atol, 4 * std::ldexp(1.0, -13) * std::sqrt(512.0 / 32) * std::sqrt(512.0), 1e-9);
  EXPECT_NEAR((t8_big.atol - base.atol) / (t8.atol - base.atol), 16.0, 1e-9);  // grows like K
}

TEST(LinearAlgoCache, KeysDifferInEveryField) {
  LinearGemmKey a;
  a.m = 1, a.n = 4096, a.k = 4096, a.ld_input = 4096, a.ld_weight = 4096, a.ld_out = 4096;
  a.align_input = a.align_weight = a.align_out = 256;
  const LinearGemmKeyHash h;
  std::vector<LinearGemmKey> variants(12, a);
  variants[0].m = 2;
  variants[1].n = 4095;
  variants[2].k = 4095;
  variants[3].ld_input = 8192;
  variants[4].ld_weight = 8192;
  variants[5].ld_out = 8192;
  variants[6].in_dtype = 1;
  variants[7].out_dtype = 1;
  variants[8].bias = true;
  variants[9].device = 1;
  variants[10].align_input = 16;
  variants[11].align_bias = 16;
  for (const auto& v : variants) {
    EXPECT_FALSE(v == a);
    EXPECT_NE(h(v), h(a));
  }
}

TEST(LinearAlgoCache, ConcurrentMissesStoreOneValuePerKey) {
  ConcurrentCache<int, int> cache;
  std::atomic<int> made{0};
  std::vector<std::thread> threads;
  std::vector<int> seen(8 * 200);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i)
        seen[static_cast<size_t>(t * 200 + i)] = cache.get_or_make(i % 50, [&] { return ++made * 1000 + i % 50; });
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(cache.size(), 50u);
  EXPECT_GE(made.load(), 50);
  for (int t = 0; t < 8; ++t)
    for (int i = 0; i < 200; ++i) {
      const int key = i % 50;
      EXPECT_EQ(seen[static_cast<size_t>(t * 200 + i)], cache.get_or_make(key, [] { return -1; }));
      EXPECT_EQ(seen[static_cast<size_t>(t * 200 + i)] % 1000, key);
    }
}

TEST(LinearAlgoCache, PointerAlignment) {
  alignas(256) static char buf[512];
  EXPECT_EQ(pointer_alignment(buf), 256);
  EXPECT_EQ(pointer_alignment(buf + 16), 16);
  EXPECT_EQ(pointer_alignment(buf + 2), 2);
  EXPECT_EQ(pointer_alignment(buf + 3), 1);
  EXPECT_EQ(pointer_alignment(buf + 384), 128);
}

}  // namespace
}  // namespace fk::ops
