// What the model is told after each candidate: compiler errors verbatim; the verdict with
// the failing round, shape, index and error figures; per-workload timings, speedups and
// fractions of speed of light; a profiler summary. And what it is told when its answer
// held no code.
#pragma once
#include <string>

#include "agent/code_extract.h"
#include "harness/judge/eval_pipeline.h"

namespace fk::agent {

// max_chars bounds the verbatim compiler log / message (its head is kept: the first
// errors are the ones that matter).
std::string evaluation_feedback(const bench::CandidateRun& run, const std::string& profile, size_t max_chars = 16000);
std::string no_code_feedback(const ExtractedCode& extracted, const std::string& finish_reason);

}  // namespace fk::agent
