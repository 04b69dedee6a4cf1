// The e2e kinds of model: each registered kind is recognised from its name, its workloads
// are described (or refused by name) as that kind takes them, a side's runs fold to the
// median time with reproducibility from their outputs, the comparison goes to the kind's
// own, and output agreement is relative L2 / cosine / largest difference with NaN never
// within a bound.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fk/element.h"
#include "fk/status.h"
#include "fk/tensor.h"
#include "harness/e2e/e2e_patterns.h"
#include "harness/e2e/repeat_runs.h"

namespace fk::e2e {
namespace {

using nlohmann::json;

TEST(E2ePatterns, KindsOfTheRegisteredModels) {
  EXPECT_EQ(e2e_kind("tiny-llama"), E2eKind::generate);
  EXPECT_EQ(e2e_kind("tiny-bge-m3"), E2eKind::text_encoder);
  EXPECT_EQ(e2e_kind("tiny-flux"), E2eKind::denoise);
  EXPECT_EQ(e2e_kind("flux.1-dev"), E2eKind::denoise);
  EXPECT_EQ(e2e_kind("tiny-yolov10"), E2eKind::detect);
  EXPECT_EQ(e2e_kind("yolov10n"), E2eKind::detect);
  EXPECT_THROW(e2e_kind("no-such-model"), Error);
}

TEST(E2ePatterns, WorkloadsAsEachKindTakesThem) {
  EXPECT_EQ(e2e_workload_json("flux.1-dev", "1024px").at("image_tokens"), 4096);
  EXPECT_EQ(e2e_workload_json("yolov10n", "32x640").at("images"), 32);
  EXPECT_EQ(e2e_workload_json("tiny-bge-m3", "3x20").at("sequence_lengths"), json({20, 20, 20}));
  EXPECT_EQ(e2e_workload_json("tiny-llama", "tiny").at("name"), "tiny");
  EXPECT_THROW(e2e_workload_json("tiny-flux", "latency-1"), Error);
  EXPECT_THROW(e2e_workload_json("tiny-yolov10", "1024px"), Error);
  EXPECT_THROW(e2e_workload_json("tiny-llama", "1024px"), Error);
}

TEST(E2ePatterns, DenoiseAndDetectRunsFoldToTheirMedian) {
  for (const char* pattern : {"denoise", "detect"}) {
    const json r0 = {{"pattern", pattern}, {"elapsed_s", 3.0}, {"images", 2}, {"outputs", {"a"}}};
    json r1 = r0, r2 = r0;
    r1["elapsed_s"] = 1.0;
    r2["elapsed_s"] = 2.0;
    json f = fold_runs({r0, r1, r2});
    EXPECT_DOUBLE_EQ(f.at("elapsed_s").get<double>(), 2.0) << pattern;
    EXPECT_DOUBLE_EQ(f.at("images_per_s").get<double>(), 1.0) << pattern;
    EXPECT_EQ(f.at("runs"), 3);
    EXPECT_TRUE(f.at("reproducible").get<bool>());
    r2["outputs"] = {"b"};
    EXPECT_FALSE(fold_runs({r0, r1, r2}).at("reproducible").get<bool>()) << pattern;
  }
  EXPECT_THROW(fold_runs({}), Error);
}

TEST(E2ePatterns, ComparisonGoesToTheKindsOwn) {
  const json base = {{"pattern", "detect"}, {"elapsed_s", 1.0}, {"images_per_s", 1.0}};
  const json cand = {{"pattern", "detect"}, {"elapsed_s", 0.5}, {"images_per_s", 2.0}};
  const json cmp = compare_pattern_runs(base, cand);
  EXPECT_TRUE(cmp.contains("bounds"));  // the detector comparison's
  EXPECT_EQ(cmp.at("verdict"), "INCORRECT");  // nothing compared
  EXPECT_DOUBLE_EQ(cmp.at("speedup").at("throughput").get<double>(), 2.0);
}

TEST(E2ePatterns, AgreementOfTwoOutputs) {
  const Agreement same = agreement({1, 2, 3}, {1, 2, 3});
  EXPECT_EQ(same.rel_l2, 0.0);
  EXPECT_DOUBLE_EQ(same.cosine, 1.0);
  EXPECT_EQ(same.max_abs, 0.0);
  const Agreement off = agreement({3, 4}, {3, 5});  // |d| = 1, |a| = 5
  EXPECT_DOUBLE_EQ(off.rel_l2, 0.2);
  EXPECT_DOUBLE_EQ(off.max_abs, 1.0);
  EXPECT_NEAR(off.cosine, (9.0 + 20.0) / (5.0 * std::sqrt(34.0)), 1e-12);
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const float bad : {nan, inf}) {
    const Agreement g = agreement({1, 2}, {bad, 2});
    EXPECT_FALSE(within(g.rel_l2, 1e30));
    EXPECT_FALSE(within(g.max_abs, 1e30));
  }
  EXPECT_THROW(agreement({1, 2}, {1}), Error);
  EXPECT_TRUE(within(0.01, 0.02));
  EXPECT_FALSE(within(0.03, 0.02));
}

TEST(E2ePatterns, HostFloatsOfAnyFloatDtype) {
  for (const DType dt : {DType::f32, DType::f16, DType::bf16}) {
    const Tensor t = Tensor::empty({2, 3}, dt);
    for (int64_t i = 0; i < 6; ++i)
      store_element(static_cast<char*>(t.data()) + i * dtype_size(dt), dt, 0.5 * static_cast<double>(i) - 1);
    EXPECT_EQ(host_floats(t.view()), std::vector<float>({-1, -0.5f, 0, 0.5f, 1, 1.5f})) << dtype_name(dt);
  }
}

}  // namespace
}  // namespace fk::e2e
