// One run of an end-to-end evaluation of a recommendation model (DLRM), in its own worker
// process as e2e_detect_run.h is for the detectors: optionally with candidate kernels
// installed, on the workload's samples (capture_recommend.h: "tiny", "BxL"; a fixed seed,
// the same on both sides), one forward pass over the packed batch once unrecorded, then
// `iters` times (elapsed_s: their median). The baseline run writes its logits (teacher_out); the candidate run compares its own with
// them (teacher_in): logits_err (the largest |difference| of a logit over 1 + |the
// baseline's logit|: logits are of order one and cancel, so a relative L2 error over them
// would magnify honest rounding) and probability_max_abs_err (the largest difference of a
// click probability).
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fk/dtype.h"
#include "fk/tensor_view.h"
#include "harness/capture/capture_recommend.h"

namespace fk::e2e {

// Bounds of a candidate against the baseline run. Measured on tiny-dlrmv2 (bf16,
// e2e_recommend_run_test): a relu whose every positive output is one bf16 unit in the last
// place up (a bias no honest kernel has: rounding errs both ways) moves the logits by 0.014
// of 1 + |logit| and the probabilities by 0.004; a relu that leaks a tenth of its negative
// inputs, by several times the bounds.
inline constexpr double kMaxLogitErr = 0.05;
inline constexpr double kMaxProbabilityAbsErr = 0.01;

struct RecommendRunOptions {
  std::string model;  // a preset or checkpoint folder of a DLRM
  bool dummy_weights = false;
  DeviceType backend = DeviceType::cpu;
  DType dtype = DType::bf16;
  uint64_t seed = 0;  // dummy weights
  std::string workload = "tiny";
  int iters = 3;
  std::vector<std::pair<std::string, std::filesystem::path>> installs;  // op -> candidate library
  std::filesystem::path teacher_out, teacher_in;
};

nlohmann::json run_recommend_workload(const RecommendRunOptions& options);

// The two sides' folded runs: speedup (ratio of the median forward times) and the verdict
// (INCORRECT when the logits or probabilities are beyond the bounds, or were not compared).
nlohmann::json compare_recommend_runs(const nlohmann::json& baseline, const nlohmann::json& candidate);

}  // namespace fk::e2e
