// Human-readable results of an evaluation batch: a Markdown summary and a self-contained
// HTML report (inline SVG: the fast_p curve and one speedup chart per task).
#pragma once
#include <string>
#include <vector>

#include "harness/judge/eval_pipeline.h"

namespace fk::bench {

std::string markdown_report(const std::vector<CandidateRun>& runs, const Json& summary);
std::string html_report(const std::vector<CandidateRun>& runs, const Json& summary);

}  // namespace fk::bench
