// `fk env --measure` on small sizes: every ceiling is measured and plausible, and the
// result survives the JSON round trip.
#include <gtest/gtest.h>

#include "harness/device/ceilings.h"
#include "harness/device/device_info.h"
#include "support/test_seed.h"

namespace fk::bench {
namespace {

TEST(CeilingsGpu, QuickMeasurementGivesPlausibleNumbers) {
  FK_REQUIRE_GPU();
  std::vector<std::string> steps;
  MeasureOptions o = MeasureOptions::quick();
  o.progress = [&](const std::string& s) { steps.push_back(s); };
  const DeviceCeilings c = measure_ceilings(o);
  EXPECT_EQ(c.device_name, query_gpu(0).name);
  EXPECT_GE(steps.size(), 3u);
  // Loose bounds: small sizes measure the code path, not the device's best.
  EXPECT_GT(c.copy_bandwidth.value, 50e9);
  EXPECT_LT(c.copy_bandwidth.value, 20e12);
  EXPECT_GT(c.bf16_gemm.value, 1e12);
  EXPECT_LT(c.bf16_gemm.value, 5000e12);
  EXPECT_GT(c.fp32_fma.value, 1e12);
  EXPECT_LT(c.fp32_fma.value, 500e12);
  const GpuInfo g = query_gpu(0);
  if (g.cc_major >= 9) EXPECT_GT(c.fp8_gemm.value, 1e12) << c.fp8_gemm.method;
  EXPECT_FALSE(c.copy_bandwidth.method.empty());
  EXPECT_FALSE(c.bf16_gemm.detail.empty());
  const DeviceCeilings back = ceilings_from_json(to_json(c));
  EXPECT_DOUBLE_EQ(back.bf16_gemm.value, c.bf16_gemm.value);
}

}  // namespace
}  // namespace fk::bench
