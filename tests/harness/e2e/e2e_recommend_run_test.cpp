// The DLRM end-to-end run on the CPU backend (tiny-dlrmv2): a second baseline run agrees
// exactly; a relu that rounds the worst honest way (one bf16 unit in the last place up)
// stays well within the bounds (printed: the measurement they rest on); a leaky relu is
// INCORRECT; the comparison's verdicts and speedup; bad workloads and models refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/status.h"
#include "harness/e2e/e2e_recommend_run.h"
#include "models/registry.h"

namespace fk::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct TeacherFile {
  fs::path path = fs::temp_directory_path() / concat("fk-e2e-recommend-", ::getpid(), ".safetensors");
  ~TeacherFile() { fs::remove(path); }
};

// relu with negative inputs scaled by Leak / 10 (0: the honest one), positive outputs
// UlpsUp bf16 units in the last place up.
template <int Leak, int UlpsUp>
fk_status relu(const void* raw, void*) {
  const auto& a = *static_cast<const ops::ReluArgs*>(raw);
  for (int64_t t = 0; t < a.input.shape[0]; ++t)
    for (int64_t h = 0; h < a.input.shape[1]; ++h) {
      double x = load_element(a.input.element_ptr(t * a.input.strides[0] + h), a.input.dtype);
      x = x > 0 ? x * (1 + UlpsUp * std::ldexp(1.0, -7)) : x * Leak / 10.0;  // bf16 keeps 7 fraction bits
      store_element(a.out.element_ptr(t * a.out.strides[0] + h), a.out.dtype, x);
    }
  return FK_OK;
}

std::pair<json, json> baseline_and_with_relu(fk_op_fn fn, const fs::path& teacher) {
  RecommendRunOptions o;
  o.model = "tiny-dlrmv2";
  o.workload = "32x4";
  o.iters = 1;
  o.teacher_out = teacher;
  const json base = run_recommend_workload(o);
  o.teacher_out.clear();
  o.teacher_in = teacher;
  OpRegistry::global().install("relu", DeviceType::cpu, fn, "test relu");
  struct Reset {
    ~Reset() { OpRegistry::global().reset("relu", DeviceType::cpu); }
  } reset;
  return {base, run_recommend_workload(o)};
}

TEST(E2eRecommendRun, ASecondBaselineRunAgreesExactly) {
  const TeacherFile teacher;
  const auto [base, again] = baseline_and_with_relu(relu<0, 0>, teacher.path);
  EXPECT_EQ(base.at("pattern"), "recommend");
  EXPECT_EQ(base.at("samples"), 32);
  EXPECT_EQ(again.at("outputs"), base.at("outputs"));
  EXPECT_EQ(again.at("agreement").at("logits_err").get<double>(), 0.0);
  EXPECT_EQ(compare_recommend_runs(base, again).at("verdict"), "PASSED");
}

TEST(E2eRecommendRun, AnHonestRoundingStaysWellWithinTheBounds) {
  const TeacherFile teacher;
  const auto [base, cand] = baseline_and_with_relu(relu<0, 1>, teacher.path);
  const json& g = cand.at("agreement");
  std::printf("[ e2e    ] tiny-dlrmv2, relu one bf16 unit up: logits %.4g of 1 + |logit|, probabilities %.4g\n",
              g.at("logits_err").get<double>(), g.at("probability_max_abs_err").get<double>());
  EXPECT_GT(g.at("logits_err").get<double>(), 0.0);
  EXPECT_LT(g.at("logits_err").get<double>(), kMaxLogitErr / 2);
  EXPECT_LT(g.at("probability_max_abs_err").get<double>(), kMaxProbabilityAbsErr / 2);
  EXPECT_EQ(compare_recommend_runs(base, cand).at("verdict"), "PASSED");
}

TEST(E2eRecommendRun, ALeakyReluIsIncorrect) {
  const TeacherFile teacher;
  const auto [base, wrong] = baseline_and_with_relu(relu<1, 0>, teacher.path);
  const json cmp = compare_recommend_runs(base, wrong);
  EXPECT_EQ(cmp.at("verdict"), "INCORRECT") << cmp.dump();
  EXPECT_NE(cmp.at("reason").get<std::string>().find("logit"), std::string::npos) << cmp.dump();
}

TEST(E2eRecommendRun, ComparisonVerdictsAndSpeedup) {
  const json base = {{"pattern", "recommend"}, {"elapsed_s", 2.0}, {"samples_per_s", 1.0}};
  json cand = {{"pattern", "recommend"}, {"elapsed_s", 1.0}, {"samples_per_s", 2.0},
               {"agreement", {{"values", 4}, {"logits_err", 0.001}, {"probability_max_abs_err", 0.0001}}}};
  json cmp = compare_recommend_runs(base, cand);
  EXPECT_EQ(cmp.at("verdict"), "PASSED");
  EXPECT_DOUBLE_EQ(cmp.at("speedup").at("throughput").get<double>(), 2.0);
  cand["agreement"]["probability_max_abs_err"] = 0.05;
  cmp = compare_recommend_runs(base, cand);
  EXPECT_EQ(cmp.at("verdict"), "INCORRECT");
  EXPECT_NE(cmp.at("reason").get<std::string>().find("click probability"), std::string::npos);
  cand["agreement"]["probability_max_abs_err"] = 0.0;
  cand["agreement"]["logits_err"] = nullptr;  // a NaN, as the run's JSON stores it
  EXPECT_EQ(compare_recommend_runs(base, cand).at("verdict"), "INCORRECT");
  cand.erase("agreement");
  EXPECT_EQ(compare_recommend_runs(base, cand).at("reason"), "no outputs were compared");
}

TEST(E2eRecommendRun, RefusesOtherWorkloadsAndModels) {
  EXPECT_EQ(recommend_workload("2048x1").samples, 2048);
  EXPECT_EQ(recommend_workload("2048x1").bag_size, 1);
  for (const char* bad : {"x4", "8x", "8y4", "0x1", "8x-1", "mixed"}) {
    try {
      recommend_workload(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("recommendation workload"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(is_recommender(models::resolve_model("tiny-dlrmv2")));
  EXPECT_FALSE(is_recommender(models::resolve_model("tiny-bge-m3")));
  RecommendRunOptions o;
  o.model = "tiny-bge-m3";
  try {
    run_recommend_workload(o);
    ADD_FAILURE() << "a text encoder ran as a recommendation model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a recommendation model"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fk::e2e
