// Human-readable results of an evaluation batch: a Markdown summary and a self-contained
// HTML report (inline SVG: the fast_p curve and one speedup chart per task).
#pragma once
#include <string>
#include <vector>

#include "harness/judge/eval_pipeline.h"

namespace fk::bench {

// Numbers that may not exist, as every report and the command line print them: a speedup
// (or a geometric mean of speedups) that was not measured (a failed candidate, a mean over
// no passing workload) is "n/a", never 0.000 or inf; a time never measured is "-".
bool speedup_measured(double speedup);  // finite and > 0
std::string format_speedup(double speedup, int precision = 3);
std::string format_time_us(const TimingStats& t, int precision = 2);

std::string markdown_report(const std::vector<CandidateRun>& runs, const Json& summary);
std::string html_report(const std::vector<CandidateRun>& runs, const Json& summary);

}  // namespace fk::bench
