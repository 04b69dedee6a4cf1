// Judging a candidate run against the baseline run of the same workload: greedy-token
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

nlohmann::json compare_runs(const nlohmann::json& baseline, const nlohmann::json& candidate);

}  // namespace fk::e2e
