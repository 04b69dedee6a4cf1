// reshape_and_cache: the CPU reference on hand-placed slots, strided key/value views out
// of a fused qkv buffer, a page-strided cache, fp8 scaling and argument errors.
#include <gtest/gtest.h>

#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/kv_cache.h"

namespace fk::ops {
namespace {

fk_status run_cpu(const ReshapeAndCacheArgs& a) {
  return OpRegistry::global().baseline("reshape_and_cache", DeviceType::cpu)(&a, nullptr);
}

Tensor iota(const Shape& shape, DType dt, double start, double step) {
  Tensor t = Tensor::empty(shape, dt);
  for (int64_t i = 0; i < t.numel(); ++i) store_element(t.view().element_ptr(i), dt, start + step * static_cast<double>(i % 200));
  return t;
}
Tensor slots(const std::vector<int64_t>& s) {
  Tensor t = Tensor::empty({static_cast<int64_t>(s.size())}, DType::i64);
  for (size_t i = 0; i < s.size(); ++i) t.data_as<int64_t>()[i] = s[i];
  return t;
}
Tensor scalar(double v) {
  Tensor t = Tensor::empty({1}, DType::f32);
  set(t.view(), v, 0);
  return t;
}

constexpr int64_t kHk = 2, kD = 8, kS = 4, kP = 3;

TEST(ReshapeAndCache, WritesAddressedSlotsOnly) {
  Tensor key = iota({3, kHk, kD}, DType::bf16, 1, 1), value = iota({3, kHk, kD}, DType::bf16, -1, -1);
  Tensor kc = Tensor::zeros({kP, kS, kHk, kD}, DType::bf16), vc = Tensor::zeros({kP, kS, kHk, kD}, DType::bf16);
  Tensor sm = slots({5, -1, 0});  // token 0 -> page 1 offset 1; token 1 padding; token 2 -> page 0 offset 0
  ASSERT_EQ(run_cpu({key, value, kc, vc, sm, {}, {}}), FK_OK) << last_error_message();
  for (int64_t p = 0; p < kP; ++p)
    for (int64_t s = 0; s < kS; ++s)
      for (int64_t h = 0; h < kHk; ++h)
        for (int64_t d = 0; d < kD; ++d) {
          const int64_t token = p == 1 && s == 1 ? 0 : (p == 0 && s == 0 ? 2 : -1);
          const double k = token < 0 ? 0.0 : get(key.view(), token, h, d);
          const double v = token < 0 ? 0.0 : get(value.view(), token, h, d);
          EXPECT_EQ(get(kc.view(), p, s, h, d), k) << p << " " << s << " " << h << " " << d;
          EXPECT_EQ(get(vc.view(), p, s, h, d), v) << p << " " << s << " " << h << " " << d;
        }
}

// key and value as views of one fused [T, (Hq + 2 Hk) * D] qkv buffer; k_cache and v_cache as
// the halves of one [P, 2, S, Hk, D] buffer.
TEST(ReshapeAndCache, StridedViewsEqualContiguousTensors) {
  const int64_t T = 4, Hq = 4, width = (Hq + 2 * kHk) * kD;
  Tensor qkv = iota({T, width}, DType::bf16, 0.5, 0.25);
  TensorView key = make_view(qkv.view().element_ptr(Hq * kD), {T, kHk, kD}, DType::bf16, Device::cpu());
  key.strides[0] = width;
  TensorView value = key;
  value.data = qkv.view().element_ptr((Hq + kHk) * kD);
  Tensor key_c = Tensor::empty({T, kHk, kD}, DType::bf16), value_c = Tensor::empty({T, kHk, kD}, DType::bf16);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < kHk; ++h)
      for (int64_t d = 0; d < kD; ++d) {
        set(key_c.view(), get(key, t, h, d), t, h, d);
        set(value_c.view(), get(value, t, h, d), t, h, d);
      }
  Tensor kv = Tensor::zeros({kP, 2, kS, kHk, kD}, DType::bf16);
  TensorView kc = make_view(kv.data(), {kP, kS, kHk, kD}, DType::bf16, Device::cpu());
  kc.strides[0] = 2 * kS * kHk * kD;
  TensorView vc = kc;
  vc.data = kv.view().element_ptr(kS * kHk * kD);
  Tensor kc_c = Tensor::zeros({kP, kS, kHk, kD}, DType::bf16), vc_c = Tensor::zeros({kP, kS, kHk, kD}, DType::bf16);
  Tensor sm = slots({11, 2, -1, 4});
  ASSERT_EQ(run_cpu({key, value, kc, vc, sm, {}, {}}), FK_OK) << last_error_message();
  ASSERT_EQ(run_cpu({key_c, value_c, kc_c, vc_c, sm, {}, {}}), FK_OK) << last_error_message();
  for (int64_t p = 0; p < kP; ++p)
    for (int64_t s = 0; s < kS; ++s)
      for (int64_t h = 0; h < kHk; ++h)
        for (int64_t d = 0; d < kD; ++d) {
          EXPECT_EQ(get(kc, p, s, h, d), get(kc_c.view(), p, s, h, d));
          EXPECT_EQ(get(vc, p, s, h, d), get(vc_c.view(), p, s, h, d));
        }
}

TEST(ReshapeAndCache, Fp8CacheStoresScaledSaturatedValues) {
  Tensor key = Tensor::empty({1, 1, 4}, DType::bf16), value = Tensor::empty({1, 1, 4}, DType::bf16);
  const double xs[4] = {0.5, -0.25, 10, -10};
  for (int i = 0; i < 4; ++i) {
    set(key.view(), xs[i], 0, 0, i);
    set(value.view(), xs[i] * 2, 0, 0, i);
  }
  Tensor kc = Tensor::zeros({1, 2, 1, 4}, DType::f8e4m3fn), vc = Tensor::zeros({1, 2, 1, 4}, DType::f8e4m3fn);
  Tensor ks = scalar(0.125), vs = scalar(0.5);
  ASSERT_EQ(run_cpu({key, value, kc, vc, slots({1}), ks, vs}), FK_OK) << last_error_message();
  const double k_expect[4] = {4, -2, 80, -80}, v_expect[4] = {2, -1, 40, -40};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(get(kc.view(), 0, 1, 0, i), k_expect[i]);
    EXPECT_EQ(get(vc.view(), 0, 1, 0, i), v_expect[i]);
    EXPECT_EQ(get(kc.view(), 0, 0, 0, i), 0);
  }
  Tensor tiny = scalar(0.001);  // 10 / 0.001 saturates at 448
  ASSERT_EQ(run_cpu({key, value, kc, vc, slots({0}), tiny, tiny}), FK_OK) << last_error_message();
  EXPECT_EQ(get(kc.view(), 0, 0, 0, 2), 448);
  EXPECT_EQ(get(kc.view(), 0, 0, 0, 3), -448);
  // The oracle (f64 cache) applies the same saturation.
  Tensor kc64 = Tensor::zeros({1, 2, 1, 4}, DType::f64), vc64 = Tensor::zeros({1, 2, 1, 4}, DType::f64);
  ASSERT_EQ(run_cpu({key, value, kc64, vc64, slots({0}), tiny, tiny}), FK_OK) << last_error_message();
  EXPECT_EQ(get(kc64.view(), 0, 0, 0, 2), 448);
  EXPECT_EQ(get(kc64.view(), 0, 0, 0, 0), 448);                    // 0.5 / 0.001
  EXPECT_NEAR(get(kc64.view(), 0, 0, 0, 1), -0.25 / 0.001, 1e-3);  // in range: not rounded to fp8
}

void expect_error(const ReshapeAndCacheArgs& a, const std::string& needle) {
  EXPECT_EQ(run_cpu(a), FK_ERR_INVALID_ARGUMENT) << "expected an error mentioning: " << needle;
  EXPECT_NE(std::string(last_error_message()).find(needle), std::string::npos) << last_error_message();
}

TEST(ReshapeAndCache, InvalidSlotsAreErrorsAndWriteNothing) {
  Tensor key = iota({3, kHk, kD}, DType::bf16, 1, 1), value = key;
  Tensor kc = Tensor::zeros({kP, kS, kHk, kD}, DType::bf16), vc = Tensor::zeros({kP, kS, kHk, kD}, DType::bf16);
  expect_error({key, value, kc, vc, slots({0, 12, 1}), {}, {}}, "slot_mapping[1] = 12 is outside the cache");
  expect_error({key, value, kc, vc, slots({3, -1, 3}), {}, {}}, "tokens 0 and 2 both map to slot 3");
  for (int64_t i = 0; i < kc.numel(); ++i) EXPECT_EQ(load_element(kc.view().element_ptr(i), DType::bf16), 0) << i;
}

TEST(ReshapeAndCache, BadArgumentsAreClearErrors) {
  Tensor key = iota({2, kHk, kD}, DType::bf16, 1, 1), value = key;
  Tensor kc = Tensor::zeros({kP, kS, kHk, kD}, DType::bf16), vc = Tensor::zeros({kP, kS, kHk, kD}, DType::bf16);
  Tensor sm = slots({0, 1});
  Tensor sm32 = Tensor::zeros({2}, DType::i32);
  expect_error({key, value, kc, vc, sm32, {}, {}}, "slot_mapping must be i64");
  Tensor sm3 = slots({0, 1, 2});
  expect_error({key, value, kc, vc, sm3, {}, {}}, "slot_mapping dimension 0 must be 2");
  Tensor kc_heads = Tensor::zeros({kP, kS, 3, kD}, DType::bf16);
  expect_error({key, value, kc_heads, kc_heads, sm, {}, {}}, "k_cache dimension 2 must be 2");
  Tensor kc_f16 = Tensor::zeros({kP, kS, kHk, kD}, DType::f16);
  expect_error({key, value, kc_f16, kc_f16, sm, {}, {}}, "cache dtype must be the key's");
  Tensor kc8 = Tensor::zeros({kP, kS, kHk, kD}, DType::f8e4m3fn);
  expect_error({key, value, kc8, kc8, sm, {}, {}}, "needs k_scale and v_scale");
  Tensor s = scalar(1);
  expect_error({key, value, kc, vc, sm, s, s}, "for an f8e4m3fn cache only");
  expect_error({key, value, kc8, kc8, sm, s, {}}, "both k_scale and v_scale or neither");
  Tensor zero = scalar(0);
  expect_error({key, value, kc8, kc8, sm, zero, s}, "must be positive");
  Tensor value_f16 = Tensor::zeros({2, kHk, kD}, DType::f16);
  expect_error({key, value_f16, kc, vc, sm, {}, {}}, "value must be bf16");
  TensorView kc_perm = kc.view();  // heads and slots swapped: not an NHD page
  std::swap(kc_perm.strides[1], kc_perm.strides[2]);
  expect_error({key, value, kc_perm, vc, sm, {}, {}}, "contiguous within a page");
}

TEST(ReshapeAndCache, NoTokensIsANoOp) {
  Tensor key = Tensor::zeros({0, kHk, kD}, DType::bf16);
  Tensor kc = Tensor::zeros({kP, kS, kHk, kD}, DType::bf16);
  EXPECT_EQ(run_cpu({key, key, kc, kc, slots({}), {}, {}}), FK_OK) << last_error_message();
}

}  // namespace
}  // namespace fk::ops
