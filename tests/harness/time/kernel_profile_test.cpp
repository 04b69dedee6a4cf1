#include "harness/time/kernel_profile.h"

#include <gtest/gtest.h>

namespace fk::bench {
namespace {

TEST(KernelProfile, ShortNameDemanglesAndDropsParameters) {
  EXPECT_EQ(short_kernel_name("_Z6kernelPfi"), "kernel");
  // void fk::ns::k<3>(float const*, int)
  EXPECT_EQ(short_kernel_name("_ZN2fk2ns1kILi3EEEvPKfi"), "fk::ns::k<3>");
  // Not a mangled name: kept as it is.
  EXPECT_EQ(short_kernel_name("my_kernel"), "my_kernel");
}

TEST(KernelProfile, SumsByKernelCountsOverlapOnceAndKeepsToTheWindow) {
  const std::vector<KernelRecord> recs = {
      {"a", 7, 100, 200},   // a: 100 ns
      {"b", 7, 150, 300},   // b: 150 ns, overlaps a
      {"a", 7, 400, 450},   // a again: 50 ns
      {"c", 7, 1000, 1100}, // outside the window
      {"b", 7, 50, 90},     // starts before the window
  };
  const KernelProfile p = profile_kernels(recs, 100, 1000);
  ASSERT_EQ(p.rows.size(), 2u);
  EXPECT_EQ(p.rows[0].name, "a");  // 150 ns, most first
  EXPECT_EQ(p.rows[0].launches, 2);
  EXPECT_EQ(p.rows[0].total_ns, 150u);
  EXPECT_EQ(p.rows[0].exclusive_ns, 150u);
  EXPECT_EQ(p.rows[1].name, "b");
  EXPECT_EQ(p.rows[1].total_ns, 150u);
  EXPECT_EQ(p.rows[1].exclusive_ns, 100u);  // [150, 200) lies under a
  EXPECT_EQ(p.kernel_ns, 300u);
  EXPECT_EQ(p.busy_ns, 200u + 50u);  // [100, 300) and [400, 450)
  EXPECT_EQ(p.span_ns, 350u);        // 100 to 450
  EXPECT_EQ(p.launches, 3);
}

TEST(KernelProfile, JsonIsPerUnitAndFoldsTheRest) {
  const std::vector<KernelRecord> recs = {
      {"x", 0, 0, 4000}, {"y", 0, 4000, 6000}, {"z", 0, 6000, 7000}, {"x", 0, 8000, 12000}};
  const nlohmann::json j = kernel_profile_json(profile_kernels(recs, 0, 20000), 2, 1);
  ASSERT_EQ(j["kernels"].size(), 2u);
  EXPECT_EQ(j["kernels"][0]["kernel"].get<std::string>(), "x");
  EXPECT_DOUBLE_EQ(j["kernels"][0]["us"].get<double>(), 4.0);  // 8 us over 2 units
  EXPECT_DOUBLE_EQ(j["kernels"][0]["exclusive_us"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(j["kernels"][0]["launches"].get<double>(), 1.0);
  EXPECT_EQ(j["kernels"][1]["kernel"].get<std::string>(), "(2 other kernels)");
  EXPECT_DOUBLE_EQ(j["kernels"][1]["us"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["busy_us"].get<double>(), 5.5);
  EXPECT_DOUBLE_EQ(j["span_us"].get<double>(), 6.0);
  EXPECT_DOUBLE_EQ(j["idle_us"].get<double>(), 0.5);
}

// A kernel launched early (programmatic dependent launch) waits under its predecessor:
// only its part past the predecessor's end is its own, and the exclusive times add up to
// the busy time.
TEST(KernelProfile, EarlyLaunchedKernelOwnsOnlyItsTail) {
  const std::vector<KernelRecord> recs = {{"gemm", 0, 0, 1000}, {"norm", 0, 100, 1200}, {"gemm", 0, 1150, 2000}};
  const KernelProfile p = profile_kernels(recs, 0, 5000);
  ASSERT_EQ(p.rows.size(), 2u);
  EXPECT_EQ(p.rows[0].name, "gemm");
  EXPECT_EQ(p.rows[0].exclusive_ns, 1000u + 800u);
  EXPECT_EQ(p.rows[1].name, "norm");
  EXPECT_EQ(p.rows[1].total_ns, 1100u);
  EXPECT_EQ(p.rows[1].exclusive_ns, 200u);
  EXPECT_EQ(p.busy_ns, 2000u);
  EXPECT_EQ(p.rows[0].exclusive_ns + p.rows[1].exclusive_ns, p.busy_ns);
}

TEST(KernelProfile, EmptyWindowIsZero) {
  const KernelProfile p = profile_kernels({}, 0, 10);
  EXPECT_TRUE(p.rows.empty());
  EXPECT_EQ(p.busy_ns, 0u);
  EXPECT_EQ(p.span_ns, 0u);
  const nlohmann::json j = kernel_profile_json(p, 0, 5);
  EXPECT_TRUE(j["kernels"].empty());
}

}  // namespace
}  // namespace fk::bench
