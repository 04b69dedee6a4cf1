// rope_and_cache on the GPU: the same bits as the CUDA baselines of rotary_embedding (or
// qk_norm_rope) followed by reshape_and_cache, over the engine's fused qkv and paged KV
// buffers, on the vector kernel's shapes (decode and prefill, with and without the norm,
// partial rotary, padding tokens) and the scalar kernel's. The CUDA result against the f64
// oracle is checked by the every-op oracle test.
#include <gtest/gtest.h>

#include <string>

#include "fk/runtime.h"
#include "ops/rope_and_cache_util.h"
#include "support/test_seed.h"

namespace fk::test {
namespace {

bool have_gpu() { return rt::device_count() > 0; }

void expect_equals_the_two_ops(const RopeCacheLayout& l, const std::string& name) {
  const RopeCacheBuffers host = make_rope_cache_buffers(l, seed_for(name));
  const RopeCacheBuffers fused = host.to(Device::cuda(0)), parts = host.to(Device::cuda(0));
  call_op(rope_and_cache_args(l, fused), DeviceType::cuda, nullptr);
  run_rope_then_cache(l, parts, DeviceType::cuda);
  rt::device_synchronize();
  EXPECT_TRUE(same_bytes(fused.qkv, parts.qkv)) << name << ": q / k differ";
  EXPECT_TRUE(same_bytes(fused.kv, parts.kv)) << name << ": caches differ";
  EXPECT_FALSE(same_bytes(fused.kv, host.kv)) << name << ": nothing was written to the cache";
}

TEST(RopeAndCacheGpu, EqualsRopeThenReshapeAndCache) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device";
  expect_equals_the_two_ops({1, 32, 4, 128, 128, 16, 4, /*norm=*/true}, "racg_qwen3_decode");
  expect_equals_the_two_ops({4, 32, 8, 128, 128, 16, 4, /*norm=*/false}, "racg_llama_decode4");
  expect_equals_the_two_ops({300, 32, 8, 128, 128, 16, 24, false, ops::RopeStyle::neox, DType::bf16, 7},
                            "racg_llama_prefill");
  expect_equals_the_two_ops({200, 16, 4, 128, 128, 16, 16, true, ops::RopeStyle::neox, DType::f16, 3},
                            "racg_qwen3_prefill_f16");
  expect_equals_the_two_ops({37, 8, 2, 64, 64, 16, 4, false, ops::RopeStyle::gptj, DType::f16, 5}, "racg_gptj");
  expect_equals_the_two_ops({9, 4, 2, 128, 64, 1, 12, false}, "racg_partial_page1");
  expect_equals_the_two_ops({9, 4, 2, 128, 64, 8, 3, true}, "racg_partial_norm");
  expect_equals_the_two_ops({6, 3, 1, 96, 24, 4, 3, true}, "racg_scalar_norm");        // the scalar kernel
  expect_equals_the_two_ops({5, 2, 1, 20, 20, 4, 3, false, ops::RopeStyle::neox, DType::f16, 1}, "racg_scalar");
  expect_equals_the_two_ops({6, 3, 1, 96, 32, 4, 3, true, ops::RopeStyle::gptj, DType::f16}, "racg_tail_f16");
}

}  // namespace
}  // namespace fk::test
