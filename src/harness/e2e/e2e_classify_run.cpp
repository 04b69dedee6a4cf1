#include "harness/e2e/e2e_classify_run.h"

#include <algorithm>

#include "core/safetensors/safetensors.h"
#include "fk/status.h"
#include "harness/e2e/e2e_output_compare.h"
#include "harness/e2e/e2e_patterns.h"
#include "harness/time/stats.h"
#include "harness/time/timed_calls.h"
#include "models/vision/image_classify.h"
#include "models/vision/image_classifier.h"

namespace fk::e2e {

using nlohmann::json;

namespace {

constexpr uint64_t kImageSeed = 12345;  // both sides see the same images

int64_t argmax_row(const std::vector<float>& m, int64_t row, int64_t width) {
  const auto first = m.begin() + row * width;
  return std::max_element(first, first + width) - first;
}

}  // namespace

json run_classify_workload(const ClassifyRunOptions& o) {
  FK_CHECK(o.iters >= 1, "e2e: iters must be at least 1");
  const auto loaded = install_candidates(o.installs, o.backend);
  models::ModelSource src = models::resolve_model(o.model);
  if (o.dummy_weights) src.checkpoint.clear();
  const ClassifyWorkload w = classify_workload(o.workload);
  models::vision::ImageClassifier* model = nullptr;
  std::unique_ptr<models::Model> m = create_classifier(src, w, &model);
  models::LoadOptions lo;
  lo.device = o.backend == DeviceType::cuda ? Device::cuda() : Device::cpu();
  lo.dtype = o.dtype;
  lo.checkpoint = src.checkpoint;
  lo.seed = o.seed;
  lo.max_seqs = w.images;
  model->load(lo);
  const Tensor images = models::vision::classifier_upload(
      *model, classify_images(w, model->image_size(), kImageSeed));
  Tensor logits_t;
  const std::vector<double> times =
      bench::time_calls(1, o.iters, [&] { logits_t = models::vision::classifier_run(*model, images); });
  const std::vector<float> logits = host_floats(logits_t.view());
  const int64_t n = w.images, classes = logits_t.shape()[1];
  const double elapsed = bench::median(times);
  json result = {{"pattern", "classify"},
                 {"outputs", {safetensors::hash_hex(safetensors::content_hash64(logits.data(),
                                                                                logits.size() * sizeof(float)))}},
                 {"elapsed_s", elapsed},
                 {"elapsed_s_iters", times},
                 {"images", n},
                 {"images_per_s", static_cast<double>(n) / elapsed},
                 {"backend", o.backend == DeviceType::cuda ? "cuda" : "cpu"},
                 {"installed", json::array()}};
  for (const auto& [op, lib] : o.installs) result["installed"].push_back({{"op", op}, {"library", lib.string()}});
  if (!o.teacher_out.empty()) {
    const Tensor l = host_f32(logits, {n, classes});
    safetensors::save(o.teacher_out, {{"logits", l.view()}});
  }
  if (!o.teacher_in.empty()) {
    const auto f = safetensors::File::open(o.teacher_in);
    const std::vector<float> base = host_floats(f.view("logits"));
    FK_CHECK(base.size() == logits.size(), "e2e: the baseline's ", base.size(), " logits do not match this run's ",
             logits.size());
    double worst = 0;
    int64_t same_top1 = 0;
    for (int64_t i = 0; i < n; ++i) {
      const auto first = static_cast<std::ptrdiff_t>(i * classes), last = first + static_cast<std::ptrdiff_t>(classes);
      const Agreement g = agreement(std::vector<float>(base.begin() + first, base.begin() + last),
                                    std::vector<float>(logits.begin() + first, logits.begin() + last));
      if (!(g.rel_l2 <= worst)) worst = g.rel_l2;  // NaN sticks
      same_top1 += argmax_row(base, i, classes) == argmax_row(logits, i, classes) ? 1 : 0;
    }
    result["agreement"] = {{"values", static_cast<int64_t>(logits.size())},
                           {"logits_rel_err", worst},
                           {"top1_agreement", static_cast<double>(same_top1) / static_cast<double>(n)}};
  }
  return result;
}

json compare_classify_runs(const json& base, const json& cand) {
  return compare_output_runs(
      base, cand, {"images_per_s"},
      {at_most("logits_rel_err", kMaxClassifyLogitsRelErr,
               "the logits differ from the baseline's by a relative L2 error of "),
       at_least("top1_agreement", kMinTop1Agreement, "only ", " of the images keep the baseline's top class")});
}

}  // namespace fk::e2e
