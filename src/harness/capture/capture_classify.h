// Capture for the image classifiers (MobileNetV4, ConvNeXt V2: Batch-pattern models with its own
// runner): one forward pass over a batch of images, every op call recorded as capture.h
// records an engine run. The workloads (also e2e_classify_run.h's):
//   "tiny"   2 images at the model's input size (CPU tests)
//   "BxS"    B images of S x S pixels, e.g. "1x224" (batch-1 latency), "256x224"
//            (throughput); a convolutional network takes any S
// The images are a fixed seed's standard normal values (images already normalised with the
// ImageNet mean and std, as the model takes them).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "harness/capture/capture.h"
#include "models/registry.h"

namespace fk::models::vision {
class ImageClassifier;
}

namespace fk::e2e {

struct ClassifyWorkload {
  std::string name;
  int64_t images = 2;
  int64_t size = 0;  // pixels a side; 0: the model's input size ("tiny")
  nlohmann::json to_json() const { return {{"name", name}, {"images", images}, {"size", size}}; }
};

// Throws naming the workload when it is none of the forms above.
ClassifyWorkload classify_workload(const std::string& name);

// Whether `model` is an image classifier these runs take (MobileNetV4, ConvNeXt V2).
bool is_classifier(const models::ModelSource& model);

// The classifier of `model` planned for the workload's image size (a checkpoint's config
// with its image_size set to S), not loaded. Throws naming the model when it is none.
std::unique_ptr<models::Model> create_classifier(const models::ModelSource& model, const ClassifyWorkload& workload,
                                                 models::vision::ImageClassifier** classifier);

// The workload's images for a model planned at `size`, from `seed`: host f32 [N, S, S, 3].
Tensor classify_images(const ClassifyWorkload& workload, int64_t size, uint64_t seed);

struct ClassifyCaptureOptions {
  DeviceType backend = DeviceType::cpu;
  DType dtype = DType::f16;
  uint64_t seed = 0;  // dummy weights and the images
};

// Loads the classifier of `model` (a preset with dummy weights or a checkpoint folder) for
// the workload's batch and records one forward, after one unrecorded forward.
CaptureResult capture_classifier(const models::ModelSource& model, const ClassifyWorkload& workload,
                                 const ClassifyCaptureOptions& options);

}  // namespace fk::e2e
