// Capture for the detectors (YOLOv10, a Batch-pattern model with its own runner): one
// forward pass over a batch of images, every op call recorded as capture.h records an
// engine run; yolov10_c2f (an L3 op) is recorded with its conv2d parts nested in it. The
// host-side top-k after the forward is no op and not recorded. The workloads:
//   "tiny"     2 images at the model's input size (CPU tests)
//   "BxS"      B images of S x S pixels, e.g. "1x640" (batch-1 latency), "32x640"
//              (throughput); S must be the model's input size (a fixed-size model)
// The images are uniform random RGB in [0, 1] of a fixed seed (the letterboxed image / 255).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/capture/capture.h"
#include "models/registry.h"

namespace fk::models::vision {
class Yolov10Model;
}

namespace fk::e2e {

struct DetectWorkload {
  std::string name;
  int64_t images = 2;
  int64_t size = 0;  // pixels a side; 0: the model's input size ("tiny")
  nlohmann::json to_json() const { return {{"name", name}, {"images", images}, {"size", size}}; }
};

// Throws naming the workload when it is none of the forms above.
DetectWorkload detect_workload(const std::string& name);

// Whether `model` is a detector this capture runs (its config makes a YOLOv10 model).
bool is_detector(const models::ModelSource& model);

// The YOLOv10 detector of `model`, or a named error when it is none (`what`: the caller).
models::vision::Yolov10Model& as_detector(models::Model& model, const models::ModelSource& src, const char* what);

// The workload's input size for this model: its own for "tiny"; else S, refused by name
// unless it is the model's input size.
int64_t detect_input_size(const DetectWorkload& workload, const models::vision::Yolov10Model& model);

struct DetectCaptureOptions {
  DeviceType backend = DeviceType::cpu;
  DType dtype = DType::f16;
  uint64_t seed = 0;  // dummy weights and the images
};

// Loads the detector of `model` (a preset with dummy weights or a checkpoint folder) for the
// workload's batch and records one forward, after one unrecorded forward (lazy set-up is
// no op time). Throws naming the model when it is no detector, or the workload's size when
// it is not the model's.
CaptureResult capture_detector(const models::ModelSource& model, const DetectWorkload& workload,
                               const DetectCaptureOptions& options);

}  // namespace fk::e2e
