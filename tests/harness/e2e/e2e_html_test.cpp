// The end-to-end HTML pages carry the figures: the roll-up's geometric means, failure
// counts and runs; a single report's verdict, speedups, token agreement and logit error.
#include "harness/e2e/e2e_html.h"

#include <gtest/gtest.h>

#include "harness/e2e/e2e_rollup.h"
#include "harness/e2e/e2e_test_reports.h"

namespace fk::e2e {
namespace {

bool has(const std::string& html, const std::string& s) { return html.find(s) != std::string::npos; }

TEST(E2eHtml, RollupShowsMeansFailuresAndRuns) {
  std::vector<E2eRecord> runs = {record_of_report(test::report("llama", "dense-llm", "PASSED", 1.25, 0.8)),
                                 record_of_report(test::report("llama", "dense-llm", "RUNTIME_ERROR", 0, 0, {"a"})),
                                 record_of_report(test::report("<olmoe>", "moe-llm", "PASSED", 2.0, 2.0))};
  runs[0].id = 1, runs[1].id = 2, runs[2].id = 3;
  nlohmann::json r = rollup(runs);
  r["selection"] = "every run of batch b";
  const std::string html = e2e_rollup_html(r);
  EXPECT_TRUE(has(html, "<!doctype html>"));
  EXPECT_TRUE(has(html, "every run of batch b"));
  EXPECT_TRUE(has(html, "model:llama"));
  EXPECT_TRUE(has(html, "category:moe-llm"));
  EXPECT_TRUE(has(html, "1.250"));  // llama throughput geomean (the failure left out)
  EXPECT_TRUE(has(html, "0.800"));  // and latency
  EXPECT_TRUE(has(html, "<span class='RUNTIME_ERROR'>RUNTIME_ERROR</span> 1"));
  EXPECT_TRUE(has(html, "&lt;olmoe&gt;"));  // escaped
  EXPECT_FALSE(has(html, "<olmoe>"));
  EXPECT_TRUE(has(html, "<svg"));  // the speedup bars
  EXPECT_TRUE(has(html, "rms_norm (L1)"));
  EXPECT_TRUE(has(html, "</html>"));
}

TEST(E2eHtml, ReportShowsVerdictAndFigures) {
  const std::string html = e2e_report_html(test::report("llama", "dense-llm", "PASSED", 1.5, 1.25));
  EXPECT_TRUE(has(html, "<span class='PASSED'>PASSED</span>"));
  EXPECT_TRUE(has(html, "1.500"));
  EXPECT_TRUE(has(html, "1.250"));
  EXPECT_TRUE(has(html, "0.750"));    // exact-match rate
  EXPECT_TRUE(has(html, "0.0125"));   // max logit error
  EXPECT_TRUE(has(html, "0.00025"));  // mean KL
  EXPECT_TRUE(has(html, "rms_norm"));
  const std::string failed = e2e_report_html(test::report("llama", "dense-llm", "RUNTIME_ERROR", 0, 0));
  EXPECT_TRUE(has(failed, "worker exited with code 1: boom"));
  EXPECT_FALSE(has(failed, "Speedup"));
}

// A detector's (or FLUX.1's, or a text encoder's) run has no tokens: its outputs' agreement
// with the baseline run is shown with the bounds.
TEST(E2eHtml, ReportOfARunWithoutTokensShowsItsOutputsAgreement) {
  nlohmann::json r = test::report("yolov10n", "edge-detection", "INCORRECT", 1.5, 1.5);
  nlohmann::json& c = r["comparison"];
  c.erase("token_agreement");
  c.erase("teacher_forced");
  c["agreement"] = {{"raw_rel_err", 0.183}, {"detection_agreement", 0.97}, {"detections", 600}};
  c["bounds"] = {{"raw_rel_err", 0.02}, {"detection_agreement", 0.9}};
  const std::string html = e2e_report_html(r);
  EXPECT_TRUE(has(html, "<span class='INCORRECT'>INCORRECT</span>"));
  EXPECT_TRUE(has(html, "1.500"));  // the speedup
  EXPECT_TRUE(has(html, "<td>raw_rel_err</td><td>0.183</td><td>0.02</td>"));
  EXPECT_TRUE(has(html, "<td>detections</td><td>600</td><td>-</td>"));
  EXPECT_FALSE(has(html, "Greedy tokens"));
}

}  // namespace
}  // namespace fk::e2e
