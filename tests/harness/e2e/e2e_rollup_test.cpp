// The end-to-end roll-up on hand-made runs: geometric means per model, per category and
// overall; failures counted by verdict and left out of the means (the op-level rule); the
// latest run per model × workload × candidate set.
#include "harness/e2e/e2e_rollup.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "harness/e2e/e2e_test_reports.h"
#include "fk/status.h"

namespace fk::e2e {
namespace {

using nlohmann::json;

E2eRecord run(int64_t id, const std::string& model, const std::string& category, const std::string& verdict,
              double throughput, double latency, const std::vector<std::string>& ops = {"rms_norm"}) {
  E2eRecord r = record_of_report(test::report(model, category, verdict, throughput, latency, ops));
  r.id = id;
  return r;
}

TEST(E2eRollup, GeomeansPerModelCategoryAndOverall) {
  const std::vector<E2eRecord> runs = {
      run(1, "llama", "dense-llm", "PASSED", 2.0, 1.0),
      run(2, "llama", "dense-llm", "PASSED", 0.5, 4.0, {"silu_and_mul"}),
      run(3, "qwen", "dense-llm", "PASSED", 4.0, 1.0),
      run(4, "olmoe", "moe-llm", "PASSED", 1.5, 1.5),
  };
  const json g = rollup(runs)["groups"];
  EXPECT_NEAR(g["model:llama"]["geomean_throughput_speedup"].get<double>(), 1.0, 1e-12);  // sqrt(2 * 0.5)
  EXPECT_NEAR(g["model:llama"]["geomean_latency_speedup"].get<double>(), 2.0, 1e-12);     // sqrt(1 * 4)
  EXPECT_NEAR(g["category:dense-llm"]["geomean_throughput_speedup"].get<double>(), std::cbrt(4.0), 1e-12);
  EXPECT_NEAR(g["category:moe-llm"]["geomean_latency_speedup"].get<double>(), 1.5, 1e-12);
  EXPECT_NEAR(g["overall"]["geomean_throughput_speedup"].get<double>(), std::pow(6.0, 0.25), 1e-12);
  EXPECT_EQ(g["overall"]["runs"], 4);
  EXPECT_EQ(g["overall"]["passed"], 4);
  EXPECT_TRUE(g["overall"]["failures"].empty());
}

// A failed run counts in runs and in its verdict's count, and is left out of the means
// (not averaged in as 0): bench::aggregate_of treats an incorrect task the same way. An
// INCORRECT run's measured speedup is ignored too: a wrong answer fast is no speedup.
TEST(E2eRollup, FailuresAreCountedAndLeftOutOfTheMeans) {
  const std::vector<E2eRecord> runs = {
      run(1, "llama", "dense-llm", "PASSED", 2.0, 2.0),
      run(2, "llama", "dense-llm", "INCORRECT", 9.0, 9.0, {"a"}),
      run(3, "llama", "dense-llm", "RUNTIME_ERROR", 0, 0, {"b"}),
      run(4, "llama", "dense-llm", "RUNTIME_ERROR", 0, 0, {"c"}),
      run(5, "olmoe", "moe-llm", "COMPILE_ERROR", 0, 0),
  };
  const json g = rollup(runs)["groups"];
  const json& llama = g["model:llama"];
  EXPECT_EQ(llama["runs"], 4);
  EXPECT_EQ(llama["passed"], 1);
  EXPECT_EQ(llama["failures"], json({{"INCORRECT", 1}, {"RUNTIME_ERROR", 2}}));
  EXPECT_NEAR(llama["geomean_throughput_speedup"].get<double>(), 2.0, 1e-12);
  EXPECT_NEAR(llama["geomean_latency_speedup"].get<double>(), 2.0, 1e-12);
  // No passed run at all: no mean (0), shown as "-".
  EXPECT_EQ(g["category:moe-llm"]["geomean_throughput_speedup"].get<double>(), 0.0);
  EXPECT_EQ(g["overall"]["runs"], 5);
  EXPECT_EQ(g["overall"]["failures"]["COMPILE_ERROR"], 1);
}

TEST(E2eRollup, LatestPerModelWorkloadAndCandidateSet) {
  const std::vector<E2eRecord> runs = {
      run(3, "llama", "dense-llm", "PASSED", 1.2, 1.0),                      // newer rms_norm on llama
      run(1, "llama", "dense-llm", "INCORRECT", 1.0, 1.0),                   // replaced by run 3
      run(2, "llama", "dense-llm", "PASSED", 1.1, 1.0, {"rms_norm", "x"}),  // another candidate set
      run(4, "qwen", "dense-llm", "PASSED", 1.3, 1.0),
  };
  const auto latest = latest_per_key(runs);
  ASSERT_EQ(latest.size(), 3u);
  std::vector<int64_t> ids;
  for (const auto& r : latest) ids.push_back(r.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 3, 4}));
}

TEST(E2eRollup, TextListsGroupsAndRuns) {
  const json r = rollup({run(1, "llama", "dense-llm", "PASSED", 2.0, 1.5), run(2, "llama", "dense-llm", "INCORRECT", 1, 1, {"a"})});
  const std::string t = rollup_text(r);
  EXPECT_NE(t.find("overall"), std::string::npos) << t;
  EXPECT_NE(t.find("model:llama"), std::string::npos) << t;
  EXPECT_NE(t.find("2.000"), std::string::npos) << t;
  EXPECT_NE(t.find("1.500"), std::string::npos) << t;
  EXPECT_NE(t.find("INCORRECT 1"), std::string::npos) << t;
  EXPECT_LT(t.find("overall"), t.find("category:dense-llm")) << "overall comes first";
}

TEST(E2eRollup, NothingToScoreIsAnError) { EXPECT_THROW(rollup({}), Error); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(E2eRollup, SelectsStoredRunsAndNamesWhatIsMissing) {
  test::TempDb db("fk-e2e-rollup-select");
  E2eStore store(db.path);
  EXPECT_NE(error_of([&] { select_runs(store, "", ""); }).find("no end-to-end runs in"), std::string::npos);
  store.add("b1", record_of_report(test::report("llama", "dense-llm", "INCORRECT", 1, 1)));
  store.add("b1", record_of_report(test::report("olmoe", "moe-llm", "PASSED", 1, 1)));
  store.add("b2", record_of_report(test::report("llama", "dense-llm", "PASSED", 1, 1)));
  EXPECT_EQ(select_runs(store, "", "").runs.size(), 2u);  // llama's b2 run replaced its b1 run
  EXPECT_EQ(select_runs(store, "", "b1").runs.size(), 2u);
  const RunSelection one = select_runs(store, "llama", "b1");
  ASSERT_EQ(one.runs.size(), 1u);
  EXPECT_EQ(one.runs[0].verdict, "INCORRECT");
  EXPECT_EQ(one.description, "every run of batch b1, model llama");
  const std::string unknown = error_of([&] { select_runs(store, "qwen", ""); });
  EXPECT_NE(unknown.find("'qwen'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("models stored: llama, olmoe"), std::string::npos) << unknown;
  EXPECT_NE(error_of([&] { select_runs(store, "", "b9"); }).find("batch 'b9'"), std::string::npos);
}

}  // namespace
}  // namespace fk::e2e
