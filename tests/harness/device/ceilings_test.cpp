// Stored ceilings (JSON round trip, paths, malformed files) and the speed-of-light
// arithmetic; no device needed.
#include "harness/device/ceilings.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "support/test_seed.h"

namespace fk::bench {
namespace {

DeviceCeilings sample_ceilings() {
  DeviceCeilings c;
  c.device_name = "NVIDIA H100 80GB HBM3";
  c.date = "2025-01-31T12:00:00Z";
  c.driver_version = "12.8";
  c.runtime_version = "13.0";
  c.compute_capability = "9.0";
  c.sm_count = 132;
  c.copy_bandwidth = {3.0e12, "cudaMemcpyAsync D2D", "kernel 2.9"};
  c.bf16_gemm = {750e12, "cuBLASLt bf16 8192^3", ""};
  c.fp8_gemm = {1400e12, "cuBLASLt fp8", "fast"};
  c.fp32_fma = {60e12, "FMA chains", ""};
  return c;
}

// Points FK_HOME at a fresh directory for one test, and restores it after.
class TempFkHome : public testing::Test {
 protected:
  void SetUp() override {
    if (const char* h = std::getenv("FK_HOME")) saved_ = h, had_ = true;
    dir_ = std::filesystem::temp_directory_path() /
           ("fk_ceilings_test_" + std::to_string(::getpid()) + "_" + std::to_string(test::seed_for("home") % 100000));
    std::filesystem::remove_all(dir_);
    ::setenv("FK_HOME", dir_.c_str(), 1);
  }
  void TearDown() override {
    std::filesystem::remove_all(dir_);
    if (had_) ::setenv("FK_HOME", saved_.c_str(), 1);
    else ::unsetenv("FK_HOME");
  }
  std::filesystem::path dir_;
  std::string saved_;
  bool had_ = false;
};

TEST_F(TempFkHome, SaveAndLoadRoundTrip) {
  const DeviceCeilings c = sample_ceilings();
  EXPECT_FALSE(load_ceilings(c.device_name).has_value());
  const auto path = save_ceilings(c);
  EXPECT_EQ(path, dir_ / "ceilings" / "nvidia_h100_80gb_hbm3.json");
  EXPECT_TRUE(std::filesystem::exists(path));
  const auto back = load_ceilings(c.device_name);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->device_name, c.device_name);
  EXPECT_EQ(back->date, c.date);
  EXPECT_EQ(back->driver_version, "12.8");
  EXPECT_EQ(back->sm_count, 132);
  EXPECT_DOUBLE_EQ(back->copy_bandwidth.value, 3.0e12);
  EXPECT_EQ(back->copy_bandwidth.method, "cudaMemcpyAsync D2D");
  EXPECT_EQ(back->copy_bandwidth.detail, "kernel 2.9");
  EXPECT_DOUBLE_EQ(back->bf16_gemm.value, 750e12);
  EXPECT_DOUBLE_EQ(back->fp8_gemm.value, 1400e12);
  EXPECT_DOUBLE_EQ(back->fp32_fma.value, 60e12);
  EXPECT_EQ(to_json(*back), to_json(c));
}

TEST_F(TempFkHome, MalformedFilesNameTheProblem) {
  const auto path = ceilings_path("Some GPU");
  std::filesystem::create_directories(path.parent_path());
  { std::ofstream(path) << "{not json"; }
  try {
    load_ceilings("Some GPU");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("some_gpu.json"), std::string::npos) << e.what();
  }
  auto j = to_json(sample_ceilings());
  j["ceilings"].erase("bf16_gemm");
  try {
    ceilings_from_json(j, "f.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing field 'bf16_gemm'"), std::string::npos) << e.what();
  }
  j = to_json(sample_ceilings());
  j["ceilings"]["copy_bandwidth"]["value"] = "fast";
  EXPECT_THROW(ceilings_from_json(j, "f.json"), Error);
  j = to_json(sample_ceilings());
  j["format"] = 99;
  EXPECT_THROW(ceilings_from_json(j, "f.json"), Error);
}

TEST(Ceilings, DirectoryFallsBackToTheUserCache) {
  const char* saved = std::getenv("FK_HOME");
  const std::string keep = saved ? saved : "";
  ::unsetenv("FK_HOME");
  const char* home = std::getenv("HOME");
  if (home && *home) EXPECT_EQ(ceilings_dir(), std::filesystem::path(home) / ".cache" / "fastkernels" / "ceilings");
  if (saved) ::setenv("FK_HOME", keep.c_str(), 1);
}

TEST(Ceilings, ComputeRateFollowsTheMathDtype) {
  const DeviceCeilings c = sample_ceilings();
  EXPECT_DOUBLE_EQ(compute_rate(c, DType::bf16), 750e12);
  EXPECT_DOUBLE_EQ(compute_rate(c, DType::f16), 750e12);
  EXPECT_DOUBLE_EQ(compute_rate(c, DType::f8e4m3fn), 1400e12);
  EXPECT_DOUBLE_EQ(compute_rate(c, DType::f8e5m2), 1400e12);
  EXPECT_DOUBLE_EQ(compute_rate(c, DType::f32), 60e12);
  EXPECT_STREQ(compute_ceiling_name(DType::bf16), "bf16_gemm");
  EXPECT_STREQ(compute_ceiling_name(DType::f8e4m3fn), "fp8_gemm");
  EXPECT_STREQ(compute_ceiling_name(DType::f32), "fp32_fma");
}

TEST(Ceilings, SpeedOfLightIsTheSlowerOfMemoryAndCompute) {
  const DeviceCeilings c = sample_ceilings();
  // rms_norm-like: 256 MiB moved, few flops: memory bound.
  OpCost mem{256.0 * (1 << 20), 1e8, DType::f32};
  SpeedOfLight s = speed_of_light(mem, c);
  EXPECT_DOUBLE_EQ(s.memory_s, 256.0 * (1 << 20) / 3.0e12);
  EXPECT_DOUBLE_EQ(s.compute_s, 1e8 / 60e12);
  EXPECT_STREQ(s.bound(), "memory");
  EXPECT_DOUBLE_EQ(s.seconds(), s.memory_s);
  // Running at twice the speed-of-light time is 50%.
  EXPECT_DOUBLE_EQ(sol_fraction(mem, 2 * s.memory_s, c), 0.5);
  // GEMM 8192^3 bf16: compute bound.
  const double n = 8192;
  OpCost gemm{3 * n * n * 2, 2 * n * n * n, DType::bf16};
  s = speed_of_light(gemm, c);
  EXPECT_STREQ(s.bound(), "compute");
  EXPECT_DOUBLE_EQ(s.seconds(), 2 * n * n * n / 750e12);
  EXPECT_NEAR(sol_fraction(gemm, 1.6e-3, c), (2 * n * n * n / 750e12) / 1.6e-3, 1e-12);
  EXPECT_DOUBLE_EQ(sol_fraction(gemm, 0, c), 0);
  // An unmeasured compute ceiling leaves only the memory term.
  DeviceCeilings no_fp8 = c;
  no_fp8.fp8_gemm = {};
  OpCost fp8{1e6, 1e15, DType::f8e4m3fn};
  EXPECT_DOUBLE_EQ(speed_of_light(fp8, no_fp8).compute_s, 0);
  EXPECT_DOUBLE_EQ(speed_of_light(fp8, no_fp8).seconds(), 1e6 / 3.0e12);
}

TEST(Ceilings, TableShowsEveryCeiling) {
  const std::string t = format_ceilings(sample_ceilings());
  EXPECT_NE(t.find("NVIDIA H100 80GB HBM3"), std::string::npos) << t;
  EXPECT_NE(t.find("3.000 TB/s"), std::string::npos) << t;
  EXPECT_NE(t.find("750.0 TFLOP/s"), std::string::npos) << t;
  EXPECT_NE(t.find("1400.0 TFLOP/s"), std::string::npos) << t;
  EXPECT_NE(t.find("60.0 TFLOP/s"), std::string::npos) << t;
  EXPECT_NE(t.find("cuBLASLt bf16 8192^3"), std::string::npos) << t;
}

TEST(Ceilings, LoadByDeviceIndexWithoutADeviceIsEmpty) {
  if (rt::cuda_available()) GTEST_SKIP() << "a device is present";
  EXPECT_FALSE(load_ceilings(0).has_value());
}

TEST(Ceilings, MeasuringWithoutADeviceIsAClearError) {
  if (rt::cuda_available()) GTEST_SKIP() << "a device is present";
  try {
    measure_ceilings(MeasureOptions::quick());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), FK_ERR_UNSUPPORTED);
    EXPECT_TRUE(std::string(e.what()).find("CUDA") != std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fk::bench
