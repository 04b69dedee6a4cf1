// One run of an end-to-end evaluation of an image classifier (MobileNetV4), in its own worker
// process as e2e_detect_run.h is for the detectors: optionally with candidate kernels
// installed, on the workload's images (capture_classify.h: "tiny", "BxS"; a fixed seed, the
// same on both sides), one forward once unrecorded, then `iters` times (elapsed_s: their
// median). The baseline run writes its logits (teacher_out); the candidate run compares its
// own with them (teacher_in): logits_rel_err (relative L2 error, the worst image) and
// top1_agreement (the fraction of images whose top class is the baseline's).
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fk/dtype.h"
#include "fk/tensor_view.h"
#include "harness/capture/capture_classify.h"

namespace fk::e2e {

// Bounds of a candidate against the baseline run. Measured on tiny-mobilenetv4 (f16,
// e2e_classify_run_test): a global_avg_pool whose every output is one f16 unit in the last
// place up moves the logits by 1.6e-3 relative; a pool that leaves out one pixel, by about
// 20%. Top-1 may change only between logits within rounding of each
// other.
inline constexpr double kMaxClassifyLogitsRelErr = 0.01;
inline constexpr double kMinTop1Agreement = 0.9;

struct ClassifyRunOptions {
  std::string model;  // a preset or checkpoint folder of an image classifier
  bool dummy_weights = false;
  DeviceType backend = DeviceType::cpu;
  DType dtype = DType::f16;
  uint64_t seed = 0;  // dummy weights
  std::string workload = "tiny";
  int iters = 3;
  std::vector<std::pair<std::string, std::filesystem::path>> installs;  // op -> candidate library
  std::filesystem::path teacher_out, teacher_in;
};

nlohmann::json run_classify_workload(const ClassifyRunOptions& options);

// The two sides' folded runs: speedup (ratio of the median forward times) and the verdict
// (INCORRECT when the logits or the top classes are beyond the bounds, or were not compared).
nlohmann::json compare_classify_runs(const nlohmann::json& baseline, const nlohmann::json& candidate);

}  // namespace fk::e2e
