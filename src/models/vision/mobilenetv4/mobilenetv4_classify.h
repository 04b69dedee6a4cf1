// MobileNetV4's host-side runner (the Batch pattern's pre- and post-processing for an image
// classifier): normalised host images in, logits out, and the top-k classes of each image.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "models/vision/mobilenetv4/mobilenetv4_model.h"

namespace fk::models::vision {

// Runs a loaded model over `images`, a host f32 [N, S, S, 3] tensor already normalised (see
// mobilenetv4_model.h), N at most the model's max_seqs: converts them to the model dtype on
// its device, plans, runs the forward pass and copies the logits back (synchronising).
// Returns logits [N, num_classes] as f32 on the host.
Tensor mobilenetv4_classify(MobileNetV4Model& model, const Tensor& images);

// Its two halves: the images converted to the model dtype on its device (checked as above),
// and one forward pass over such device images with the logits brought back (what a
// benchmark times).
Tensor mobilenetv4_upload(const MobileNetV4Model& model, const Tensor& images);
Tensor mobilenetv4_run(MobileNetV4Model& model, const Tensor& images);

struct MobileNetV4TopK {
  std::vector<int64_t> classes;  // by descending logit, ties to the lower class
  std::vector<float> logits;
};

// The k highest logits of each row of host f32 logits [N, classes] (k clamped to classes).
std::vector<MobileNetV4TopK> mobilenetv4_top_k(const Tensor& logits, int64_t k);
// [{"classes": [...], "logits": [...]}, ...], one object per image.
std::string mobilenetv4_top_k_json(const std::vector<MobileNetV4TopK>& images);

}  // namespace fk::models::vision
