// An image classifier of the Batch pattern (MobileNetV4, ConvNeXtV2): a Model whose step input
// is "images" [N, S, S, 3] (normalised as its eval transform says, channels last, in the model
// dtype on its device) and whose forward returns logits [N, num_classes]. What fk classify,
// its e2e run, capture and fk serve's /v1/classify know of a classifier.
#pragma once
#include <cstdint>

#include "models/model.h"
#include "models/vision/image_input.h"

namespace fk::models::vision {

class ImageClassifier : public Model {
 public:
  virtual int64_t image_size() const = 0;  // S
  // Its eval transform from a decoded image (image_input.h), to image_size().
  virtual ClassifierTransform transform() const = 0;
  virtual int64_t num_classes() const = 0;
  virtual const LoadOptions& load_options() const = 0;
  // The pooled features of the last forward, before the classifier: [N, F].
  virtual TensorView pooled_output() const = 0;
};

}  // namespace fk::models::vision
