// One run of an end-to-end evaluation of a detector (YOLOv10), in its own worker process as
// e2e_run.h is for Generate models: optionally with candidate kernels installed, on the
// workload's images (capture_detect.h: "tiny", "BxS"; uniform random RGB of a fixed seed,
// the same on both sides), one forward and the host top-k, once unrecorded, then `iters`
// times (elapsed_s: their median). The baseline run writes its outputs (teacher_out); the
// candidate run compares its own with them (teacher_in):
//   raw_rel_err            the head's raw output (DFL box logits and class logits per
//                          anchor, before any selection): relative L2 error, the worst image
//   boxes_max_abs_err      the decoded boxes (xyxy pixels, every anchor): largest difference
//   scores_max_abs_err     the class scores (sigmoid, every anchor and class): largest difference
//   detection_agreement    the NMS-free top-k's detections: the fraction of the baseline's
//                          (anchor, class) pairs the candidate also selected, the worst image
//   matched_box_max_abs_err  the boxes of those common detections: largest difference
// The result's fields match the other runs' where they mean the same ("pattern",
// "outputs": a checksum of the raw output, "elapsed_s", "backend", "installed").
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "fk/dtype.h"
#include "fk/tensor_view.h"

namespace fk::e2e {

// Bounds of a candidate against the baseline run. Measured on tiny-yolov10 (f16,
// e2e_detect_run_test): an upsampling whose every output is one f16 unit in the last place
// up (an honest kernel's worst rounding) moves the raw output by about 1e-3 and keeps every
// detection; the f16 CUDA forward is within 3e-3 of the CPU one (yolov10_gpu_test). The
// top-k's membership changes only where two scores are within rounding of each other at
// its boundary. A kernel that computes something else (an upsampling from the wrong row)
// moves the raw output by tens of percent.
inline constexpr double kMaxRawRelErr = 0.02;
inline constexpr double kMinDetectionAgreement = 0.9;

struct DetectRunOptions {
  std::string model;  // a preset or checkpoint folder of a YOLOv10 detector
  bool dummy_weights = false;
  DeviceType backend = DeviceType::cpu;
  DType dtype = DType::f16;
  uint64_t seed = 0;  // dummy weights
  std::string workload = "tiny";
  int iters = 3;
  std::vector<std::pair<std::string, std::filesystem::path>> installs;  // op -> candidate library
  std::filesystem::path teacher_out, teacher_in;
};

nlohmann::json run_detect_workload(const DetectRunOptions& options);

// The two sides' folded runs: speedup (ratio of the median forward + top-k times) and the
// verdict (INCORRECT when the raw output or the detections are beyond the bounds, or were
// not compared).
nlohmann::json compare_detect_runs(const nlohmann::json& baseline, const nlohmann::json& candidate);

}  // namespace fk::e2e
