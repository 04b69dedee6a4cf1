#include "harness/capture/capture_classify.h"

#include "fk/random.h"
#include "fk/status.h"
#include "models/vision/mobilenetv4/mobilenetv4_classify.h"
#include "models/vision/mobilenetv4/mobilenetv4_model.h"

namespace fk::e2e {

ClassifyWorkload classify_workload(const std::string& name) {
  ClassifyWorkload w;
  w.name = name;
  if (name == "tiny") return w;
  const auto x = name.find('x');
  bool ok = x != std::string::npos && x > 0 && x + 1 < name.size();
  if (ok) {
    try {
      size_t used = 0;
      w.images = std::stoll(name.substr(0, x), &used);
      ok = used == x;
      w.size = std::stoll(name.substr(x + 1), &used);
      ok = ok && used == name.size() - x - 1;
    } catch (const std::exception&) {
      ok = false;
    }
  }
  FK_CHECK(ok && w.images >= 1 && w.size >= 1, "workload '", name, "' is not one an image classifier takes: tiny, ",
           "or BxS (B images of S x S pixels, e.g. 1x224)");
  return w;
}

bool is_classifier(const models::ModelSource& model) { return model.registration->architecture == "mobilenetv4"; }

std::unique_ptr<models::Model> create_classifier(const models::ModelSource& model, const ClassifyWorkload& w,
                                                 models::vision::MobileNetV4Model** classifier) {
  std::string config = model.config_json;
  if (w.size > 0) {  // the convolutions take any size: the config says which one to plan for
    nlohmann::json c = nlohmann::json::parse(config);
    c["image_size"] = w.size;
    config = c.dump();
  }
  std::unique_ptr<models::Model> m = models::create_model_from_config(config, model.source);
  *classifier = dynamic_cast<models::vision::MobileNetV4Model*>(m.get());
  FK_CHECK(*classifier != nullptr, "model '", model.source, "' is not an image classifier these runs take");
  return m;
}

Tensor classify_images(const ClassifyWorkload& w, int64_t size, uint64_t seed) {
  Tensor images = Tensor::empty({w.images, size, size, 3}, DType::f32);
  fill_normal(images, seed, 0, 0.0f, 1.0f);
  return images;
}

CaptureResult capture_classifier(const models::ModelSource& model, const ClassifyWorkload& w,
                                 const ClassifyCaptureOptions& options) {
  models::vision::MobileNetV4Model* cls = nullptr;
  std::unique_ptr<models::Model> m = create_classifier(model, w, &cls);
  models::LoadOptions lo;
  lo.device = options.backend == DeviceType::cuda ? Device::cuda() : Device::cpu();
  lo.dtype = options.dtype;
  lo.checkpoint = model.checkpoint;
  lo.seed = options.seed;
  lo.max_seqs = w.images;
  cls->load(lo);
  const Tensor images = classify_images(w, cls->config().image_size, options.seed + 1);
  auto forward = [&] { models::vision::mobilenetv4_classify(*cls, images); };
  forward();  // unrecorded: lazy set-up (algorithm choice, workspaces) is no op time
  return capture_calls(forward, options.backend == DeviceType::cuda, cls->task_category());
}

}  // namespace fk::e2e
