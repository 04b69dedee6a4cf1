#include "models/vision/image_classify.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <numeric>

#include "fk/element.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "models/checkpoint_tensor.h"

namespace fk::models::vision {

Tensor classifier_upload(const ImageClassifier& model, const Tensor& images) {
  FK_CHECK(model.loaded(), "classify: the model is not loaded");
  const int64_t s = model.image_size();
  FK_CHECK(images.dtype() == DType::f32 && images.device().is_cpu() && images.shape().size() == 4 &&
               images.shape()[1] == s && images.shape()[2] == s && images.shape()[3] == 3,
           "classify: images must be host f32 [N, ", s, ", ", s, ", 3], got ", images.describe());
  const LoadOptions& lo = model.load_options();
  return f32_to_model(images, lo.dtype, lo.device);
}

Tensor classifier_run(ImageClassifier& model, const Tensor& images) {
  const LoadOptions& lo = model.load_options();
  StepInputs in;
  in.tensors = {{"images", images.view()}};
  model.plan(in, nullptr);
  const TensorView out = model.forward(in, nullptr);
  if (!lo.device.is_cpu()) rt::device_synchronize();  // the forward ran on the default stream
  const int64_t n = out.shape[0], classes = out.shape[1];
  Tensor logits = Tensor::empty({n, classes}, DType::f32);
  // The output is a contiguous prefix of the logits buffer: copy it whole, then widen.
  Tensor raw = Tensor::empty({n, classes}, out.dtype);
  rt::memcpy_sync(raw.data(), Device::cpu(), out.data, out.device, raw.nbytes());
  convert_rows(raw.view(), logits);
  return logits;
}

Tensor classifier_logits(ImageClassifier& model, const Tensor& images) {
  return classifier_run(model, classifier_upload(model, images));
}

std::vector<ClassTopK> top_k_classes(const Tensor& logits, int64_t k) {
  FK_CHECK(logits.dtype() == DType::f32 && logits.device().is_cpu() && logits.shape().size() == 2,
           "top_k_classes: logits must be host f32 [N, classes], got ", logits.describe());
  const int64_t n = logits.shape()[0], classes = logits.shape()[1];
  k = std::clamp<int64_t>(k, 0, classes);
  std::vector<ClassTopK> out(static_cast<size_t>(n));
  std::vector<int64_t> order(static_cast<size_t>(classes));
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits.data_as<float>() + i * classes;
    std::iota(order.begin(), order.end(), int64_t{0});
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int64_t a, int64_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
    for (int64_t j = 0; j < k; ++j) {
      out[static_cast<size_t>(i)].classes.push_back(order[static_cast<size_t>(j)]);
      out[static_cast<size_t>(i)].logits.push_back(row[order[static_cast<size_t>(j)]]);
    }
  }
  return out;
}

std::string top_k_classes_json(const std::vector<ClassTopK>& images) {
  nlohmann::json j = nlohmann::json::array();
  for (const ClassTopK& t : images) j.push_back({{"classes", t.classes}, {"logits", t.logits}});
  return j.dump();
}

}  // namespace fk::models::vision
