// reshape_and_cache on the GPU: views of a fused qkv buffer written into the halves of one
// paged KV buffer (vector and scalar paths, bf16 and fp8 caches), compared bit for bit
// with the CPU reference; out-of-range slots leave all memory untouched.
#include <gtest/gtest.h>

#include <cstring>

#include "fk/op_registry.h"
#include "fk/ops/kv_cache.h"
#include "fk/philox.h"
#include "fk/runtime.h"
#include "ops/common/case_builder.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

struct Layout {
  int64_t T, Hq, Hk, D, S, P;
  DType cache;
};

// key/value as views into qkv [T, (Hq + 2 Hk) * D]; caches as halves of kv [P, 2, S, Hk, D].
ReshapeAndCacheArgs make_args(const Layout& l, const Tensor& qkv, const Tensor& kv, const Tensor& slots,
                              const Tensor& ks, const Tensor& vs) {
  const Device dev = qkv.device();
  ReshapeAndCacheArgs a;
  a.key = make_view(qkv.view().element_ptr(l.Hq * l.D), {l.T, l.Hk, l.D}, qkv.dtype(), dev);
  a.key.strides[0] = (l.Hq + 2 * l.Hk) * l.D;
  a.value = a.key;
  a.value.data = qkv.view().element_ptr((l.Hq + l.Hk) * l.D);
  a.k_cache = make_view(kv.data(), {l.P, l.S, l.Hk, l.D}, l.cache, dev);
  a.k_cache.strides[0] = 2 * l.S * l.Hk * l.D;
  a.v_cache = a.k_cache;
  a.v_cache.data = kv.view().element_ptr(l.S * l.Hk * l.D);
  a.slot_mapping = slots;
  if (l.cache == DType::f8e4m3fn) {
    a.k_scale = ks;
    a.v_scale = vs;
  }
  return a;
}

void expect_same_as_cpu(const Layout& l, const std::string& name) {
  const uint64_t seed = test::seed_for(name);
  Tensor qkv = random_tensor({l.T, (l.Hq + 2 * l.Hk) * l.D}, DType::bf16, seed, 1, -3.f, 3.f);
  Tensor kv = random_tensor({l.P, 2, l.S, l.Hk, l.D}, l.cache, seed, 2);
  Tensor slots = Tensor::empty({l.T}, DType::i64);
  for (int64_t t = 0; t < l.T; ++t)  // distinct slots (a stride coprime to P * S), every 5th token padding
    slots.data_as<int64_t>()[t] = t % 5 == 4 ? -1 : (t * 7 + 3) % (l.P * l.S);
  Tensor ks = random_tensor({1}, DType::f32, seed, 3, 0.005f, 0.02f), vs = random_tensor({1}, DType::f32, seed, 4, 0.005f, 0.02f);

  const Device gpu = Device::cuda(0);
  Tensor qkv_d = qkv.to(gpu), kv_d = kv.to(gpu), slots_d = slots.to(gpu), ks_d = ks.to(gpu), vs_d = vs.to(gpu);
  call_op(make_args(l, qkv, kv, slots, ks, vs), DeviceType::cpu, nullptr);
  call_op(make_args(l, qkv_d, kv_d, slots_d, ks_d, vs_d), DeviceType::cuda, nullptr);
  rt::device_synchronize();
  const Tensor got = kv_d.to(Device::cpu());
  EXPECT_EQ(std::memcmp(got.data(), kv.data(), kv.nbytes()), 0) << name;
}

TEST(ReshapeAndCacheGpu, FusedQkvIntoPagedKvMatchesCpu) {
  FK_REQUIRE_GPU();
  expect_same_as_cpu({37, 32, 8, 128, 16, 8, DType::bf16}, "kv_vector_bf16");
  expect_same_as_cpu({37, 32, 8, 128, 16, 8, DType::f8e4m3fn}, "kv_vector_fp8");
  expect_same_as_cpu({19, 4, 2, 36, 8, 5, DType::bf16}, "kv_scalar_bf16");  // D % 8 != 0
  expect_same_as_cpu({19, 4, 2, 36, 8, 5, DType::f8e4m3fn}, "kv_scalar_fp8");
  expect_same_as_cpu({4096, 32, 8, 128, 16, 300, DType::bf16}, "kv_prefill");
}

TEST(ReshapeAndCacheGpu, OutOfRangeSlotsTouchNothing) {
  FK_REQUIRE_GPU();
  const int64_t T = 3, Hk = 2, D = 64, S = 4, P = 2, page = S * Hk * D;
  Tensor key = random_tensor({T, Hk, D}, DType::bf16, 11, 1);
  // The cache is the middle of a buffer with one guard page on each side.
  Tensor buffer = random_tensor({P + 2, S, Hk, D}, DType::bf16, 11, 2);
  Tensor slots = Tensor::empty({T}, DType::i64);
  slots.data_as<int64_t>()[0] = P * S;            // one past the end
  slots.data_as<int64_t>()[1] = int64_t{1} << 40;  // far out
  slots.data_as<int64_t>()[2] = -7;                // padding
  const Device gpu = Device::cuda(0);
  Tensor key_d = key.to(gpu), buffer_d = buffer.to(gpu), slots_d = slots.to(gpu);
  TensorView cache = make_view(buffer_d.view().element_ptr(page), {P, S, Hk, D}, DType::bf16, gpu);
  call_op(ReshapeAndCacheArgs{key_d, key_d, cache, cache, slots_d, {}, {}}, DeviceType::cuda, nullptr);
  rt::device_synchronize();
  const Tensor after = buffer_d.to(Device::cpu());
  EXPECT_EQ(std::memcmp(after.data(), buffer.data(), buffer.nbytes()), 0);
}

}  // namespace
}  // namespace fk::ops
