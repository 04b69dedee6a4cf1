// `fk env`'s report: the host is described, and a machine without a device (or a CPU-only
// build) says "no CUDA device" instead of failing.
#include "harness/device/device_info.h"

#include <gtest/gtest.h>

#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::bench {
namespace {

TEST(DeviceInfo, HostIsDescribed) {
  const HostInfo h = query_host();
  EXPECT_FALSE(h.cpu_model.empty());
  EXPECT_GE(h.logical_cores, 1);
  EXPECT_GT(h.memory_bytes, uint64_t{1} << 26);
  EXPECT_FALSE(h.os.empty());
}

TEST(DeviceInfo, WithoutADeviceTheReportSaysSo) {
  if (rt::cuda_available()) GTEST_SKIP() << "a device is present";
  const EnvReport r = query_env();
  EXPECT_TRUE(r.gpus.empty());
  EXPECT_EQ(r.built_with_cuda, rt::built_with_cuda());
  EXPECT_FALSE(r.cuda_error.empty());
  const std::string text = format_env(r);
  EXPECT_NE(text.find("no CUDA device"), std::string::npos) << text;
  EXPECT_NE(text.find(r.host.cpu_model), std::string::npos) << text;
  const auto j = to_json(r);
  EXPECT_TRUE(j["gpus"].is_array() && j["gpus"].empty());
  EXPECT_EQ(j["built_with_cuda"].get<bool>(), rt::built_with_cuda());
  EXPECT_THROW(query_gpu(0), Error);
}

TEST(DeviceInfo, GpuDescription) {
  EnvReport r;
  r.built_with_cuda = true;
  r.driver_version = 12080;
  r.runtime_version = 13000;
  GpuInfo g;
  g.name = "NVIDIA H100 80GB HBM3";
  g.cc_major = 9;
  g.sm_count = 132;
  g.l2_bytes = 50u << 20;
  g.memory_bytes = uint64_t{80} << 30;
  g.memory_bus_bits = 5120;
  g.memory_clock_khz = 2619000;
  g.sm_clock_khz = 1980000;
  r.gpus.push_back(g);
  const std::string text = format_env(r);
  EXPECT_NE(text.find("NVIDIA H100 80GB HBM3"), std::string::npos) << text;
  EXPECT_NE(text.find("sm_90"), std::string::npos) << text;
  EXPECT_NE(text.find("50.00 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("1980 MHz"), std::string::npos) << text;
  EXPECT_NE(text.find("driver         12.8"), std::string::npos) << text;
  EXPECT_NEAR(g.theoretical_bandwidth_bytes_per_s(), 3.352e12, 1e9);
  const auto j = to_json(r);
  EXPECT_EQ(j["gpus"][0]["compute_capability"], "9.0");
  EXPECT_EQ(j["driver_version"], "12.8");
  EXPECT_EQ(j["gpus"][0]["sm_count"], 132);
}

TEST(DeviceInfo, Formatting) {
  EXPECT_EQ(cuda_version_string(12040), "12.4");
  EXPECT_EQ(cuda_version_string(13000), "13.0");
  EXPECT_EQ(cuda_version_string(0), "none");
  EXPECT_EQ(format_bytes(100), "100 B");
  EXPECT_EQ(format_bytes(1536), "1.50 KiB");
  EXPECT_EQ(format_bytes(uint64_t{80} << 30), "80.00 GiB");
  EXPECT_EQ(sanitize_device_name("NVIDIA H100 80GB HBM3"), "nvidia_h100_80gb_hbm3");
  EXPECT_EQ(sanitize_device_name("NVIDIA H200 NVL (MIG 1g.18gb)"), "nvidia_h200_nvl_mig_1g_18gb");
  EXPECT_EQ(sanitize_device_name("../../etc/passwd"), "etc_passwd");
  EXPECT_EQ(sanitize_device_name("  "), "unknown_device");
  const std::string ts = utc_timestamp();
  EXPECT_EQ(ts.size(), 20u);
  EXPECT_EQ(ts.back(), 'Z');
}

}  // namespace
}  // namespace fk::bench
