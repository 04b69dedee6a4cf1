// Repeated engine runs of one side (baseline or candidate) folded into one result. The
// evaluation alternates the sides (baseline, candidate, candidate, baseline, ...): run
// order alone was worth about 1% on the H100 (the first process of a pair ran slower), as
// much as a small kernel improvement, and alternation cancels it along with slow drift.
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

namespace fk::e2e {

// The first run's result (its outputs and teacher-forced figures) with the timings replaced
// by the median over `runs`: elapsed_s, output_tokens_per_s (tokens over the median
// elapsed) and each request's e2e_s; `elapsed_s_runs` lists every run's elapsed time and
// `reproducible` says whether every run produced the first run's tokens.
nlohmann::json fold_runs(const std::vector<nlohmann::json>& runs);

// Whether run `i` (0-based) of a pair sequence has the baseline first: pairs alternate.
inline bool baseline_first(int pair) { return pair % 2 == 0; }

}  // namespace fk::e2e
