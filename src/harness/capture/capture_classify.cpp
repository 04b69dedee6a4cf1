#include "harness/capture/capture_classify.h"

#include "fk/random.h"
#include "fk/status.h"
#include "models/vision/image_classify.h"
#include "models/vision/image_classifier.h"

namespace fk::e2e {

ClassifyWorkload classify_workload(const std::string& name) {
  ClassifyWorkload w;
  w.name = name;
  if (name == "tiny") return w;
  const std::string refusal = concat("capture: image classifier workload '", name, "' is not tiny, or BxS (B images of S x S pixels, two positive integers, e.g. 1x224)");
  const size_t x = name.find('x');
  FK_CHECK(x != std::string::npos, refusal);
  w.images = workload_count(std::string_view(name).substr(0, x), refusal);
  w.size = workload_count(std::string_view(name).substr(x + 1), refusal);
  return w;
}

bool is_classifier(const models::ModelSource& model) {
  return model.registration->architecture == "mobilenetv4" || model.registration->architecture == "convnextv2";
}

std::unique_ptr<models::Model> create_classifier(const models::ModelSource& model, const ClassifyWorkload& w,
                                                 models::vision::ImageClassifier** classifier) {
  std::string config = model.config_json;
  if (w.size > 0) {  // the convolutions take any size: the config says which one to plan for
    nlohmann::json c = nlohmann::json::parse(config);
    c["image_size"] = w.size;
    config = c.dump();
  }
  std::unique_ptr<models::Model> m = models::create_model_from_config(config, model.source);
  *classifier = dynamic_cast<models::vision::ImageClassifier*>(m.get());
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
  models::vision::ImageClassifier* cls = nullptr;
  std::unique_ptr<models::Model> m = create_classifier(model, w, &cls);
  models::LoadOptions lo;
  lo.device = options.backend == DeviceType::cuda ? Device::cuda() : Device::cpu();
  lo.dtype = options.dtype;
  lo.checkpoint = model.checkpoint;
  lo.seed = options.seed;
  lo.max_seqs = w.images;
  cls->load(lo);
  const Tensor images =
      models::vision::classifier_upload(*cls, classify_images(w, cls->image_size(), options.seed + 1));
  auto forward = [&] { models::vision::classifier_run(*cls, images); };
  forward();  // unrecorded: lazy set-up (algorithm choice, workspaces) is no op time
  return capture_calls(forward, options.backend == DeviceType::cuda, cls->task_category());
}

}  // namespace fk::e2e
