// What fk serve's vision endpoints compute on one loaded image model of the Batch pattern,
// from images sent as data URLs (data:image/png;base64,... or image/jpeg) or, with
// --allowed-local-media-path, local files, preprocessed as upstream
// (models/vision/image_input.h):
//   classify (MobileNetV4, ConvNeXt V2): {"images": [URL, ...] (or "image": URL), "top_k": 5} ->
//     {"object": "list", "data": [{"object": "classification", "index", "classes", "logits",
//     "probabilities"}], "model", "usage": {"images"}}: each image's top_k classes by logit,
//     with their softmax probabilities over all classes.
//   detect (YOLOv10): {"images" or "image", "score_threshold": 0.25, "max_detections": 300} ->
//     {"object": "list", "data": [{"object": "detection", "index", "width", "height",
//     "boxes", "scores", "classes"}], "model", "usage"}: the one-to-one head's detections
//     scoring at least the threshold, best first, boxes x1, y1, x2, y2 in the image's pixels.
// A request with more images than the model was loaded for runs in several forward passes.
// Calls are serialised (one model, one stream). Client errors are ApiError 400s naming the
// field and the image.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "models/model.h"
#include "serving/http/batch_service.h"

namespace fk::serve {

class VisionService {
 public:
  // `model` loaded for batches of up to `max_batch` images.
  VisionService(std::unique_ptr<models::Model> model, int64_t max_batch, std::string served_model,
                std::filesystem::path allowed_local_media = {});

  nlohmann::json classify(const std::string& body);
  nlohmann::json detect(const std::string& body);
  bool detector() const;
  const std::string& served_model() const { return served_model_; }

 private:
  std::unique_ptr<models::Model> model_;
  int64_t max_batch_;
  std::string served_model_;
  std::filesystem::path allowed_local_media_;
  std::mutex mu_;
};

// fk serve's endpoint of `service`: POST /v1/detect for a detector (task "detect"), else
// POST /v1/classify (task "classify").
BatchService vision_batch_service(std::shared_ptr<VisionService> service);

// The most images one request may bring.
inline constexpr int64_t kMaxImagesPerRequest = 1024;

}  // namespace fk::serve
