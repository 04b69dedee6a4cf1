// The evaluation reports print what was not measured as such: a failed candidate's speedup
// and a geometric mean over no passing task as "n/a", a workload never timed as "-" (never
// 0.00 us), and every run with the backend and device it ran on.
#include "harness/judge/report.h"

#include <gtest/gtest.h>

#include <limits>

namespace fk::bench {
namespace {

TEST(Report, SpeedupsThatWereNotMeasuredAreNotApplicable) {
  EXPECT_EQ(format_speedup(1.23456), "1.235");
  EXPECT_EQ(format_speedup(0.5, 1), "0.5");
  EXPECT_EQ(format_speedup(0), "n/a");
  EXPECT_EQ(format_speedup(-1), "n/a");
  EXPECT_EQ(format_speedup(std::numeric_limits<double>::infinity()), "n/a");
  EXPECT_EQ(format_speedup(std::numeric_limits<double>::quiet_NaN()), "n/a");
  EXPECT_TRUE(speedup_measured(0.01));
  EXPECT_FALSE(speedup_measured(0));
}

TEST(Report, TimesNeverMeasuredAreADash) {
  TimingStats t;
  EXPECT_EQ(format_time_us(t), "-");
  t.samples = 5;
  t.median_us = 12.345;
  EXPECT_EQ(format_time_us(t), "12.35");
}

CandidateRun failed_run() {
  CandidateRun r;
  r.task = "rms_norm";
  r.candidate = "noop.cpp";
  r.result.verdict = Verdict::INCORRECT;
  r.result.backend = "cpu";
  r.result.device = "Test CPU 9000";
  r.result.sandbox = "namespaces+seccomp";
  r.result.message = "wrong output";
  WorkloadResult w;
  w.shape = Json{{"M", 4}};
  w.correct = false;  // never timed: both timings stay empty
  r.result.workloads.push_back(w);
  return r;
}

TEST(Report, MarkdownOfAFailedRunShowsNoZeros) {
  const std::vector<CandidateRun> runs = {failed_run()};
  std::vector<TaskScore> scores = {score_of(Task{}, runs[0].result)};
  const std::string md = markdown_report(runs, scores_to_json(scores));
  EXPECT_NE(md.find("| rms_norm | INCORRECT | n/a | cpu | Test CPU 9000 | namespaces+seccomp |"), std::string::npos) << md;
  EXPECT_NE(md.find("| overall | 1 | 0 | n/a |"), std::string::npos) << md;
  EXPECT_NE(md.find("| rms_norm | `{\"M\":4}` | - | - | n/a | - |"), std::string::npos) << md;
  // fast_p is 0.00 at every p, rightly; times and speedups are nowhere 0.
  const std::string workloads = md.substr(md.find("## Workloads"));
  EXPECT_EQ(workloads.find("0.00"), std::string::npos) << md;
  EXPECT_EQ(md.find("0.000"), std::string::npos) << md;
}

TEST(Report, HtmlNamesBackendAndDevice) {
  const std::vector<CandidateRun> runs = {failed_run()};
  const std::string html = html_report(runs, scores_to_json({score_of(Task{}, runs[0].result)}));
  EXPECT_NE(html.find("on cpu (Test CPU 9000), sandbox namespaces+seccomp"), std::string::npos);
  EXPECT_NE(html.find("speedup n/a"), std::string::npos);
}

}  // namespace
}  // namespace fk::bench
