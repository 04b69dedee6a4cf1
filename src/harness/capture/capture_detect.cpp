#include "harness/capture/capture_detect.h"

#include <string_view>

#include "fk/random.h"
#include "fk/status.h"
#include "models/vision/yolov10/yolov10_model.h"

namespace fk::e2e {

namespace {

constexpr const char* kDetectForms = "tiny or BxS (B images of S x S pixels, e.g. 1x640, 32x640)";

}  // namespace

DetectWorkload detect_workload(const std::string& name) {
  DetectWorkload w{name, 2, 0};
  if (name == "tiny") return w;
  const std::string refusal = concat("capture: detection workload '", name, "' is not ", kDetectForms);
  const size_t x = name.find('x');
  FK_CHECK(x != std::string::npos, refusal);
  w.images = workload_count(std::string_view(name).substr(0, x), refusal);
  w.size = workload_count(std::string_view(name).substr(x + 1), refusal);
  return w;
}

bool is_detector(const models::ModelSource& model) {
  if (model.registration == nullptr || model.registration->pattern != models::RunPattern::batch) return false;
  const std::unique_ptr<models::Model> m = models::create_model_from_config(model.config_json, model.source);
  return dynamic_cast<models::vision::Yolov10Model*>(m.get()) != nullptr;
}

models::vision::Yolov10Model& as_detector(models::Model& model, const models::ModelSource& src, const char* what) {
  auto* d = dynamic_cast<models::vision::Yolov10Model*>(&model);
  FK_CHECK(d != nullptr, what, ": model '", src.source, "' (architecture '",
           src.registration ? src.registration->architecture : std::string("?"),
           "') is not an object detector (YOLOv10)");
  return *d;
}

int64_t detect_input_size(const DetectWorkload& w, const models::vision::Yolov10Model& model) {
  const int64_t s = model.config().imgsz;
  FK_CHECK(w.size == 0 || w.size == s, "detection workload '", w.name, "': images of ", w.size, " x ", w.size,
           " pixels, but the model takes ", s, " x ", s, " (a fixed input size)");
  return s;
}

CaptureResult capture_detector(const models::ModelSource& model, const DetectWorkload& w,
                               const DetectCaptureOptions& options) {
  std::unique_ptr<models::Model> m = models::create_model_from_config(model.config_json, model.source);
  models::vision::Yolov10Model& det = as_detector(*m, model, "capture");
  const int64_t s = detect_input_size(w, det);
  models::LoadOptions lo;
  lo.device = options.backend == DeviceType::cuda ? Device::cuda() : Device::cpu();
  lo.dtype = options.dtype;
  lo.checkpoint = model.checkpoint;
  lo.seed = options.seed;
  lo.max_seqs = w.images;
  det.load(lo);
  const Tensor images = Tensor::empty({w.images, s, s, 3}, lo.dtype, lo.device);
  fill_uniform(images.view(), options.seed + 1, 0, 0.0f, 1.0f);
  models::StepInputs in;
  in.tensors = {{"images", images.view()}};
  auto forward = [&] {
    det.plan(in, nullptr);
    det.forward(in, nullptr);
  };
  forward();  // unrecorded: lazy set-up (algorithm choice, workspaces) is no op time
  return capture_calls(forward, options.backend == DeviceType::cuda, det.task_category());
}

}  // namespace fk::e2e
