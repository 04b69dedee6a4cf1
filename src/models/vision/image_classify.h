// An image classifier's host-side runner (the Batch pattern's pre- and post-processing for
// image_classifier.h's models): normalised host images in, logits out, and the top-k classes of
// each image.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "models/vision/image_classifier.h"

namespace fk::models::vision {

// Runs a loaded model over `images`, a host f32 [N, S, S, 3] tensor already normalised (see
// image_classifier.h), N at most the model's max_seqs: converts them to the model dtype on
// its device, plans, runs the forward pass and copies the logits back (synchronising).
// Returns logits [N, num_classes] as f32 on the host.
Tensor classifier_logits(ImageClassifier& model, const Tensor& images);

// Its two halves: the images converted to the model dtype on its device (checked as above),
// and one forward pass over such device images with the logits brought back (what a
// benchmark times).
Tensor classifier_upload(const ImageClassifier& model, const Tensor& images);
Tensor classifier_run(ImageClassifier& model, const Tensor& images);

struct ClassTopK {
  std::vector<int64_t> classes;  // by descending logit, ties to the lower class
  std::vector<float> logits;
};

// The k highest logits of each row of host f32 logits [N, classes] (k clamped to classes).
std::vector<ClassTopK> top_k_classes(const Tensor& logits, int64_t k);
// [{"classes": [...], "logits": [...]}, ...], one object per image.
std::string top_k_classes_json(const std::vector<ClassTopK>& images);

}  // namespace fk::models::vision
