#include "serving/vision/vision_service.h"

#include <algorithm>
#include <cmath>

#include "fk/status.h"
#include "models/checkpoint_tensor.h"
#include "models/image/rgb_image.h"
#include "models/vision/image_input.h"
#include "models/vision/image_classify.h"
#include "models/vision/image_classifier.h"
#include "models/vision/yolov10/yolov10_detect.h"
#include "models/vision/yolov10/yolov10_model.h"
#include "serving/http/image_parts.h"
#include "serving/http/openai_api.h"

namespace fk::serve {
namespace {

using nlohmann::json;
namespace vision = models::vision;

// The request's images, decoded: "images" (a list of URLs) or "image" (one URL).
std::vector<models::image::RgbImage> request_images(const json& j, const std::filesystem::path& allowed_local_media) {
  std::vector<std::string> urls;
  if (j.contains("images")) {
    const json& a = j["images"];
    if (!a.is_array() || a.empty()) invalid_request("images", "'images' must be a non-empty list of image URLs");
    for (size_t i = 0; i < a.size(); ++i) {
      if (!a[i].is_string()) invalid_request("images", concat("image ", i, " must be a URL string"));
      urls.push_back(a[i].get<std::string>());
    }
  } else if (j.contains("image")) {
    if (!j["image"].is_string()) invalid_request("image", "'image' must be a URL string");
    urls.push_back(j["image"].get<std::string>());
  } else {
    invalid_request("images", "the request needs 'images' (a list of image URLs) or 'image'");
  }
  if (static_cast<int64_t>(urls.size()) > kMaxImagesPerRequest)
    invalid_request("images", concat("the request brings ", urls.size(), " images; at most ", kMaxImagesPerRequest,
                                     " per request"));
  std::vector<models::image::RgbImage> images;
  for (size_t i = 0; i < urls.size(); ++i) {
    const ImageRefusal refuse{"images", concat("image ", i, ": ")};
    std::string what = concat(i);
    const std::vector<uint8_t> bytes = image_url_bytes(urls[i], allowed_local_media, refuse, what);
    try {
      images.push_back(models::image::decode_rgb_image(bytes, what));
    } catch (const Error& e) {
      refuse(e.what());
    }
  }
  return images;
}

int64_t integer_field(const json& j, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_number_integer() || j[key].get<int64_t>() < lo || j[key].get<int64_t>() > hi)
    invalid_request(key, concat("'", key, "' must be an integer in [", lo, ", ", hi, "], got ", j[key].dump()));
  return j[key].get<int64_t>();
}

double number_field(const json& j, const char* key, double fallback, double lo, double hi) {
  if (!j.contains(key)) return fallback;
  if (!j[key].is_number() || !(j[key].get<double>() >= lo && j[key].get<double>() <= hi))
    invalid_request(key, concat("'", key, "' must be a number in [", lo, ", ", hi, "], got ", j[key].dump()));
  return j[key].get<double>();
}

json list_response(json data, const std::string& model, size_t images) {
  return {{"object", "list"}, {"data", std::move(data)}, {"model", model}, {"usage", {{"images", images}}}};
}

}  // namespace

VisionService::VisionService(std::unique_ptr<models::Model> model, int64_t max_batch, std::string served_model,
                             std::filesystem::path allowed_local_media)
    : model_(std::move(model)),
      max_batch_(max_batch),
      served_model_(std::move(served_model)),
      allowed_local_media_(std::move(allowed_local_media)) {
  FK_CHECK(dynamic_cast<vision::ImageClassifier*>(model_.get()) != nullptr ||
               dynamic_cast<vision::Yolov10Model*>(model_.get()) != nullptr,
           "serve: the vision service runs an image classifier (MobileNetV4, ConvNeXt V2) or a detector (YOLOv10)");
  FK_CHECK(max_batch_ >= 1, "serve: the vision service needs a batch of at least one image");
}

bool VisionService::detector() const { return dynamic_cast<vision::Yolov10Model*>(model_.get()) != nullptr; }

json VisionService::classify(const std::string& body) {
  auto* m = dynamic_cast<vision::ImageClassifier*>(model_.get());
  if (m == nullptr) throw ApiError(404, "not_found_error", "this server's model is a detector: POST /v1/detect");
  const json j = parse_body(body);
  check_model(j, served_model_);
  const int64_t classes = m->num_classes();
  const int64_t top_k = integer_field(j, "top_k", std::min<int64_t>(5, classes), 1, classes);
  const std::vector<models::image::RgbImage> images = request_images(j, allowed_local_media_);
  const vision::ClassifierTransform t = m->transform();
  json data = json::array();
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t first = 0; first < images.size(); first += static_cast<size_t>(max_batch_)) {
    const size_t last = std::min(images.size(), first + static_cast<size_t>(max_batch_));
    std::vector<std::vector<float>> pixels;
    for (size_t i = first; i < last; ++i) pixels.push_back(vision::classifier_pixels(images[i], t));
    const Tensor logits = vision::classifier_logits(*m, vision::stack_pixels(pixels, t.size));
    const std::vector<vision::ClassTopK> top = vision::top_k_classes(logits, top_k);
    for (size_t i = first; i < last; ++i) {
      const float* row = logits.data_as<float>() + (i - first) * static_cast<size_t>(classes);
      const float mx = *std::max_element(row, row + classes);
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(row[c]) - mx);
      const vision::ClassTopK& k = top[i - first];
      json probs = json::array();
      for (float l : k.logits) probs.push_back(std::exp(static_cast<double>(l) - mx) / sum);
      data.push_back({{"object", "classification"},
                      {"index", i},
                      {"classes", k.classes},
                      {"logits", k.logits},
                      {"probabilities", probs}});
    }
  }
  return list_response(std::move(data), served_model_, images.size());
}

json VisionService::detect(const std::string& body) {
  auto* m = dynamic_cast<vision::Yolov10Model*>(model_.get());
  if (m == nullptr) throw ApiError(404, "not_found_error", "this server's model is a classifier: POST /v1/classify");
  const json j = parse_body(body);
  check_model(j, served_model_);
  const double threshold = number_field(j, "score_threshold", 0.25, 0.0, 1.0);
  const int64_t max_det = integer_field(j, "max_detections", 300, 1, 100000);
  const std::vector<models::image::RgbImage> images = request_images(j, allowed_local_media_);
  const int64_t s = m->config().imgsz;
  json data = json::array();
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t first = 0; first < images.size(); first += static_cast<size_t>(max_batch_)) {
    const size_t last = std::min(images.size(), first + static_cast<size_t>(max_batch_));
    std::vector<vision::Letterboxed> boxed;
    std::vector<std::vector<float>> pixels;
    for (size_t i = first; i < last; ++i) {
      boxed.push_back(vision::letterbox(images[i], s));
      pixels.push_back(std::move(boxed.back().pixels));
    }
    const Tensor input =
        models::f32_to_model(vision::stack_pixels(pixels, s), m->load_options().dtype, m->load_options().device);
    models::StepInputs in;
    in.tensors = {{"images", input.view()}};
    m->plan(in, nullptr);
    m->forward(in, nullptr);
    const auto dets = vision::yolov10_detect(m->config(), m->boxes_output(), m->scores_output());
    for (size_t i = first; i < last; ++i) {
      const vision::Letterboxed& l = boxed[i - first];
      json boxes = json::array(), scores = json::array(), labels = json::array();
      for (const vision::Yolov10Detection& d : dets[i - first]) {
        if (d.score < threshold || static_cast<int64_t>(scores.size()) >= max_det) break;  // best first
        const std::array<float, 4> b = vision::unletterbox_box(l, d.box);
        boxes.push_back(b);
        scores.push_back(d.score);
        labels.push_back(d.label);
      }
      data.push_back({{"object", "detection"},
                      {"index", i},
                      {"width", l.width},
                      {"height", l.height},
                      {"boxes", boxes},
                      {"scores", scores},
                      {"classes", labels}});
    }
  }
  return list_response(std::move(data), served_model_, images.size());
}

BatchService vision_batch_service(std::shared_ptr<VisionService> service) {
  VisionService* s = service.get();
  BatchService b;
  b.served_model = s->served_model();
  if (s->detector()) {
    b.task = "detect";
    b.endpoints = {{"/v1/detect", [s](const std::string& body) { return s->detect(body); }}};
  } else {
    b.task = "classify";
    b.endpoints = {{"/v1/classify", [s](const std::string& body) { return s->classify(body); }}};
  }
  b.owner = std::move(service);
  return b;
}

}  // namespace fk::serve
