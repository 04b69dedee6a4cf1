// The StepImageFeatures of one step (forward_batch.h): for each image request whose image
// tokens the step computes, where its tokens are packed and which feature rows they take.
// The placement and the deepstack injection run through registry ops (Qwen3-VL's
// ImageFeatureScatter: an embedding gather and weighted_embedding_add).
#pragma once
#include <memory>
#include <vector>

#include "serving/generate/forward_batch.h"
#include "serving/generate/request_images.h"

namespace fk::engine {

struct StepImageSpan {
  std::shared_ptr<ImageFeatures> features;
  const std::vector<int64_t>* feature_of = nullptr;  // per prompt token: its feature row, or -1
  int64_t packed = 0;  // where token `start` sits in the step
  int64_t start = 0, count = 0;
};

std::unique_ptr<StepImageFeatures> make_step_image_features(std::vector<StepImageSpan> spans, Device device);

}  // namespace fk::engine
