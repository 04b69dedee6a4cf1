// The op timer on a device: samples, interleaving, the flush, and a real op end to end.
#include <gtest/gtest.h>

#include "harness/time/op_timer.h"
#include "fk/runtime.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

TimerOptions fast_options() {
  TimerOptions o;
  o.warmup_calls = 2;
  o.min_calls = 20;
  o.max_calls = 200;
  o.min_time_ms = 5;
  return o;
}

TEST(OpTimerGpu, TimesACallableWithTheRotation) {
  FK_REQUIRE_GPU();
  DeviceTimer timer(0, fast_options());
  EXPECT_GT(timer.l2_bytes(), 0u);
  EXPECT_GE(timer.flush_bytes(), 2 * timer.l2_bytes());
  constexpr int kSets = 3;
  std::vector<Tensor> bufs;
  for (int i = 0; i < kSets; ++i) bufs.push_back(Tensor::empty({64 << 20}, DType::u8, Device::cuda(0)));
  std::vector<int> used(kSets, 0);
  const auto us = timer.time(
      [&](int set, void* stream) {
        ++used[static_cast<size_t>(set)];
        rt::memset_async(bufs[static_cast<size_t>(set)].data(), set, 64 << 20, Device::cuda(0), stream);
      },
      kSets);
  ASSERT_GE(us.size(), 20u);
  EXPECT_LE(us.size(), 200u);
  for (double v : us) EXPECT_GT(v, 1.0);  // 64 MiB takes more than a microsecond
  for (int n : used) EXPECT_GT(n, 0);      // every set was used
}

TEST(OpTimerGpu, InterleavedCallsGetEqualSamples) {
  FK_REQUIRE_GPU();
  DeviceTimer timer(0, fast_options());
  Tensor small = Tensor::empty({1 << 20}, DType::u8, Device::cuda(0));
  Tensor big = Tensor::empty({256 << 20}, DType::u8, Device::cuda(0));
  const auto s = timer.time_interleaved(
      {[&](int, void* st) { rt::memset_async(small.data(), 1, small.nbytes(), Device::cuda(0), st); },
       [&](int, void* st) { rt::memset_async(big.data(), 1, big.nbytes(), Device::cuda(0), st); }});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].size(), s[1].size());
  EXPECT_LT(median(s[0]) * 10, median(s[1]));  // 256x the bytes: clearly slower
}

TEST(OpTimerGpu, FailingCallIsReported) {
  FK_REQUIRE_GPU();
  DeviceTimer timer(0, fast_options());
  EXPECT_THROW(timer.time([](int, void*) { FK_FAIL(FK_ERR_INVALID_ARGUMENT, "bad call"); }), Error);
}

TEST(OpTimerGpu, BenchesRmsNorm) {
  FK_REQUIRE_GPU();
  DeviceTimer timer(0, fast_options());
  const OpDef& def = OpRegistry::global().def("rms_norm");
  OpBenchOptions opt;
  opt.timer = fast_options();
  DeviceCeilings c;
  c.device_name = "test";
  c.copy_bandwidth.value = 20e12;  // above any device's: the fraction stays below 1
  c.fp32_fma.value = 60e12;
  const OpBenchResult r = bench_op(def, {{"tokens", 4096}, {"hidden", 4096}}, timer, opt, &c);
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_GT(r.num_sets, 1);  // 64 MiB per set: a few to exceed twice the L2
  EXPECT_GE(r.samples_us.size(), 20u);
  EXPECT_GT(r.us.median, 0);
  EXPECT_GT(r.gbps, 10);
  ASSERT_TRUE(r.sol.has_value());
  EXPECT_GT(*r.sol, 0.005);
  EXPECT_LT(*r.sol, 1.0);
  EXPECT_EQ(r.implementation, "baseline");
}

}  // namespace
}  // namespace fk::bench
