// The op timer's arithmetic and reports, without a device: how many input sets rotate,
// the per-result numbers, the table and JSON; device sets made on the CPU.
#include "harness/time/op_timer.h"

#include <gtest/gtest.h>

#include <cstring>

#include "fk/runtime.h"

namespace fk::bench {
namespace {

constexpr size_t MiB = size_t{1} << 20;

TEST(OpTimer, NumberOfSetsExceedsL2WithinTheBudget) {
  // 50 MiB L2: sets of 1 MiB need 100 copies, capped at 64.
  EXPECT_EQ(choose_num_sets(MiB, 50 * MiB, size_t{1} << 40, 64), 64);
  EXPECT_EQ(choose_num_sets(MiB, 50 * MiB, size_t{1} << 40, 1000), 100);
  // 30 MiB sets: 4 copies make 120 MiB > 100 MiB.
  EXPECT_EQ(choose_num_sets(30 * MiB, 50 * MiB, size_t{1} << 40, 64), 4);
  // Larger than twice L2 alone: one set.
  EXPECT_EQ(choose_num_sets(512 * MiB, 50 * MiB, size_t{1} << 40, 64), 1);
  // The memory budget wins: only 3 copies of 30 MiB fit in 100 MiB.
  EXPECT_EQ(choose_num_sets(30 * MiB, 50 * MiB, 100 * MiB, 64), 3);
  // Never fewer than one, even when nothing fits.
  EXPECT_EQ(choose_num_sets(30 * MiB, 50 * MiB, MiB, 64), 1);
  EXPECT_EQ(choose_num_sets(0, 50 * MiB, MiB, 64), 1);
}

DeviceCeilings ceilings() {
  DeviceCeilings c;
  c.device_name = "Test GPU";
  c.copy_bandwidth.value = 2e12;
  c.bf16_gemm.value = 500e12;
  c.fp32_fma.value = 50e12;
  return c;
}

OpBenchResult result_with(std::vector<double> us, OpCost cost) {
  OpBenchResult r;
  r.op = "rms_norm";
  r.workload = {{"tokens", 16384}, {"hidden", 4096}};
  r.cost = cost;
  r.num_sets = 4;
  r.samples_us = std::move(us);
  return r;
}

TEST(OpTimer, ResultNumbersComeFromTheMedian) {
  const DeviceCeilings c = ceilings();
  // 200 MB in 200 us: 1000 GB/s; the ceiling's 2 TB/s would take 100 us: 50%.
  OpBenchResult r = result_with({190, 200, 210, 205, 195}, {200e6, 4e9, DType::f32});
  finish_result(r, &c);
  EXPECT_DOUBLE_EQ(r.us.median, 200);
  EXPECT_NEAR(r.gbps, 1000, 1e-9);
  EXPECT_NEAR(r.tflops, 4e9 / 200e-6 / 1e12, 1e-9);
  ASSERT_TRUE(r.sol.has_value());
  EXPECT_NEAR(*r.sol, 0.5, 1e-12);
  EXPECT_EQ(r.sol_bound, "memory");
  ASSERT_TRUE(r.bandwidth_fraction.has_value());
  EXPECT_NEAR(*r.bandwidth_fraction, 0.5, 1e-12);  // memory-bound: the fraction of copy bandwidth is the SOL
  ASSERT_TRUE(r.compute_fraction.has_value());
  EXPECT_LT(*r.compute_fraction, *r.bandwidth_fraction);
  OpBenchResult no = result_with({10}, {1e6, 0, DType::bf16});
  finish_result(no, nullptr);
  EXPECT_FALSE(no.sol.has_value());
}

TEST(OpTimer, TableAndJson) {
  OpBenchReport report;
  report.device = "Test GPU";
  report.date = "2025-01-31T12:00:00Z";
  report.command_line = "fk ops bench rms_norm";
  OpBenchResult r = result_with({100, 110, 120}, {200e6, 0, DType::f32});
  finish_result(r, nullptr);
  report.results.push_back(r);
  OpBenchResult bad;
  bad.op = "rms_norm";
  bad.workload = {{"tokens", -1}};
  bad.error = "rms_norm workload needs tokens >= 0";
  report.results.push_back(bad);

  std::string t = format_table(report);
  EXPECT_NE(t.find(kNoCeilingsHint), std::string::npos) << t;
  EXPECT_NE(t.find("110.00"), std::string::npos) << t;
  EXPECT_NE(t.find("FAILED: rms_norm workload needs tokens >= 0"), std::string::npos) << t;
  auto j = to_json(report);
  EXPECT_EQ(j["device"], "Test GPU");
  EXPECT_EQ(j["command_line"], "fk ops bench rms_norm");
  EXPECT_TRUE(j["ceilings"].is_null());
  EXPECT_DOUBLE_EQ(j["results"][0]["us"]["median"].get<double>(), 110);
  EXPECT_EQ(j["results"][0]["samples_us"].size(), 3u);
  EXPECT_FALSE(j["results"][0].contains("sol_fraction"));
  EXPECT_EQ(j["results"][1]["error"], "rms_norm workload needs tokens >= 0");

  report.ceilings = ceilings();
  finish_result(report.results[0], &*report.ceilings);
  t = format_table(report);
  EXPECT_EQ(t.find(kNoCeilingsHint), std::string::npos) << t;
  EXPECT_NE(t.find("% (memory)"), std::string::npos) << t;
  j = to_json(report);
  EXPECT_EQ(j["ceilings"]["device"], "Test GPU");
  EXPECT_NEAR(j["results"][0]["sol_fraction"].get<double>(), (200e6 / 2e12) / 110e-6, 1e-12);
}

TEST(OpTimer, DeviceSetsAreIndependentCopies) {
  const OpDef& def = OpRegistry::global().def("rms_norm");
  const OpCase host = def.make_case({{"tokens", 3}, {"hidden", 64}}, 7);
  const auto sets = make_device_sets(def, host, Device::cpu(), 3);
  ASSERT_EQ(sets.size(), 3u);
  for (size_t t = 0; t < host.tensors.size(); ++t) {
    EXPECT_NE(sets[1].tensors[t].data(), sets[2].tensors[t].data());
    EXPECT_NE(sets[0].tensors[t].data(), host.tensors[t].data());
    if (def.tensor_args[t].role == ArgRole::in)
      EXPECT_EQ(std::memcmp(sets[2].tensors[t].data(), host.tensors[t].data(), host.tensors[t].nbytes()), 0);
  }
  // The argument structs point at their own set's tensors.
  const auto* v = reinterpret_cast<const TensorView*>(sets[2].args.data() + def.tensor_args[1].offset);
  EXPECT_EQ(v->data, sets[2].tensors[1].data());
  EXPECT_THROW(make_device_sets(def, host, Device::cpu(), 0), Error);
}

TEST(OpTimer, CommandLineIsReadable) {
  const std::string cl = current_command_line();
  EXPECT_NE(cl.find("op_timer_test"), std::string::npos) << cl;
}

TEST(OpTimer, NoDeviceIsAClearError) {
  if (rt::cuda_available()) GTEST_SKIP() << "a device is present";
  try {
    DeviceTimer timer(0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(rt::built_with_cuda() ? "CUDA device" : "built without CUDA"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace fk::bench
