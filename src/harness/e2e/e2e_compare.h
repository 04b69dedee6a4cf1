// Judging a candidate run against the baseline run of the same workload (Generate models;
// Batch models: compare_batch_runs below): greedy-token
// agreement (exact-match rate, first divergence), the teacher-forced logit error, speedups
// (throughput: output tokens/s; latency: mean request latency; elapsed: the workload's wall
// time), and the verdict — INCORRECT when outputs disagree beyond the dtype's bounds,
// whatever the speed.
#pragma once
#include <nlohmann/json.hpp>

#include "fk/dtype.h"

namespace fk::e2e {

// Bounds for a bf16/f16 engine: a candidate that only rounds differently moves the logits by
// about a percent of their range (the HF goldens measured ~1% for a whole bf16 model against
// float32) and the distributions by far less than 1e-2 nats.
inline constexpr double kMaxRelLogitErr = 0.05;
inline constexpr double kMaxMeanKl = 1e-2;
// A greedy token that leaves the baseline's is a rounding flip only at a near-tie: where,
// teacher forced on the baseline's tokens, the baseline's token leads the candidate's by
// less than the logits' own error bound (of the row's largest |logit|).
inline constexpr double kMaxDivergenceMargin = kMaxRelLogitErr;

// Batch runs (text encoders): the last hidden states (post-LayerNorm, of order one) move by
// a few units in the last place of a 16-bit dtype under another rounding order; the dense
// vectors' cosines stay above 0.9999. A wrong kernel moves either by far more.
inline constexpr double kMaxRelHiddenErr = 0.05;
inline constexpr double kMinDenseCosine = 0.999;

// Generate runs by tokens and teacher-forced logits; Batch runs ("pattern": "batch") by
// their hidden states and dense vectors.
nlohmann::json compare_runs(const nlohmann::json& baseline, const nlohmann::json& candidate);

}  // namespace fk::e2e
