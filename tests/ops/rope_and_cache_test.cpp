// rope_and_cache on the CPU: the same bits as rotary_embedding (or qk_norm_rope) followed
// by reshape_and_cache over the engine's fused qkv and paged KV buffers, and bad input
// reported before anything is written.
#include <gtest/gtest.h>

#include <string>

#include "ops/rope_and_cache_util.h"
#include "support/test_seed.h"

namespace fk::test {
namespace {

void expect_equals_the_two_ops(const RopeCacheLayout& l, const std::string& name) {
  const RopeCacheBuffers fused = make_rope_cache_buffers(l, seed_for(name));
  const RopeCacheBuffers parts = make_rope_cache_buffers(l, seed_for(name));
  const Tensor kv_before = fused.kv.to(Device::cpu());
  call_op(rope_and_cache_args(l, fused), DeviceType::cpu, nullptr);
  run_rope_then_cache(l, parts, DeviceType::cpu);
  EXPECT_TRUE(same_bytes(fused.qkv, parts.qkv)) << name << ": q / k differ";
  EXPECT_TRUE(same_bytes(fused.kv, parts.kv)) << name << ": caches differ";
  EXPECT_FALSE(same_bytes(fused.kv, kv_before)) << name << ": nothing was written to the cache";
}

TEST(RopeAndCache, EqualsRopeThenReshapeAndCache) {
  expect_equals_the_two_ops({1, 32, 4, 128, 128, 16, 4, /*norm=*/true}, "rac_qwen3_decode");
  expect_equals_the_two_ops({5, 32, 8, 128, 128, 16, 4, /*norm=*/false}, "rac_llama_decode");
  expect_equals_the_two_ops({37, 8, 2, 64, 64, 16, 4, false, ops::RopeStyle::gptj, DType::f16, 5}, "rac_gptj_pad");
  expect_equals_the_two_ops({9, 4, 2, 128, 64, 1, 12, false}, "rac_partial_page1");
  expect_equals_the_two_ops({9, 4, 2, 128, 64, 8, 3, true}, "rac_partial_norm");
  expect_equals_the_two_ops({6, 3, 1, 96, 24, 4, 3, true, ops::RopeStyle::neox, DType::f16}, "rac_odd");
}

// The caller's buffers as they were, after a call that must fail.
void expect_error_changes_nothing(const RopeCacheBuffers& b, const ops::RopeAndCacheArgs& a,
                                  const std::string& needle) {
  const Tensor qkv = b.qkv.to(Device::cpu()), kv = b.kv.to(Device::cpu());
  try {
    call_op(a, DeviceType::cpu, nullptr);
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
  EXPECT_TRUE(same_bytes(qkv, b.qkv)) << needle;
  EXPECT_TRUE(same_bytes(kv, b.kv)) << needle;
}

TEST(RopeAndCache, BadSlotsAndPositionsAreErrorsThatChangeNothing) {
  const RopeCacheLayout l{4, 4, 2, 64, 64, 8, 2, true};
  RopeCacheBuffers b = make_rope_cache_buffers(l, seed_for("rac_bad"));
  b.slots.data_as<int64_t>()[2] = l.P * l.S;  // one past the cache
  expect_error_changes_nothing(b, rope_and_cache_args(l, b), "slot_mapping[2] = 16 is outside the cache");
  b.slots.data_as<int64_t>()[2] = b.slots.data_as<int64_t>()[1];
  expect_error_changes_nothing(b, rope_and_cache_args(l, b), "both map to slot");
  b = make_rope_cache_buffers(l, seed_for("rac_bad"));
  b.positions.data_as<int64_t>()[3] = 4096;
  expect_error_changes_nothing(b, rope_and_cache_args(l, b), "positions[3] = 4096 is outside");
}

TEST(RopeAndCache, BadArgumentsAreClearErrors) {
  const RopeCacheLayout l{2, 4, 2, 64, 64, 8, 2, true};
  const RopeCacheBuffers b = make_rope_cache_buffers(l, seed_for("rac_args"));
  ops::RopeAndCacheArgs a = rope_and_cache_args(l, b);
  a.k_weight = TensorView{};
  expect_error_changes_nothing(b, a, "give both q_weight and k_weight");
  a = rope_and_cache_args(l, b);
  a.key.rank = 2, a.key.shape[1] = l.Hk * l.D, a.key.strides[1] = 1;
  expect_error_changes_nothing(b, a, "key must have rank 3");
  a = rope_and_cache_args(l, b);
  a.v_cache.shape[1] = l.S / 2;
  expect_error_changes_nothing(b, a, "v_cache");
  a = rope_and_cache_args(l, b);
  a.slot_mapping.dtype = DType::i32;
  expect_error_changes_nothing(b, a, "slot_mapping");
}

}  // namespace
}  // namespace fk::test
