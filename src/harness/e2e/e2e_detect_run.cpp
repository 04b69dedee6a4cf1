#include "harness/e2e/e2e_detect_run.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/safetensors/safetensors.h"
#include "fk/random.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/capture/capture_detect.h"
#include "harness/e2e/e2e_output_compare.h"
#include "harness/e2e/e2e_patterns.h"
#include "harness/time/stats.h"
#include "harness/time/timed_calls.h"
#include "models/registry.h"
#include "models/vision/yolov10/yolov10_detect.h"
#include "models/vision/yolov10/yolov10_model.h"

namespace fk::e2e {

using nlohmann::json;
using models::vision::Yolov10Detection;

namespace {

constexpr uint64_t kDetectInputSeed = 12345;  // both sides see the same images

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    if (!(d <= worst)) worst = d;  // NaN sticks
    if (std::isnan(worst)) break;
  }
  return worst;
}

// The candidate's detections against the baseline's, per image: the fraction of the
// baseline's (anchor, class) pairs also selected (the worst image), and the largest box
// difference among them.
std::pair<double, double> detection_agreement(const std::vector<std::vector<Yolov10Detection>>& base,
                                              const std::vector<std::vector<Yolov10Detection>>& cand) {
  double worst = 1, box_err = 0;
  for (size_t i = 0; i < base.size(); ++i) {
    if (base[i].empty()) continue;
    std::map<std::pair<int64_t, int32_t>, const Yolov10Detection*> selected;
    for (const auto& d : cand[i]) selected[{d.anchor, d.label}] = &d;
    int64_t found = 0;
    for (const auto& d : base[i]) {
      const auto it = selected.find({d.anchor, d.label});
      if (it == selected.end()) continue;
      ++found;
      for (int k = 0; k < 4; ++k) box_err = std::max(box_err, std::fabs(static_cast<double>(d.box[k]) - it->second->box[k]));
    }
    worst = std::min(worst, static_cast<double>(found) / static_cast<double>(base[i].size()));
  }
  return {worst, box_err};
}

}  // namespace

json run_detect_workload(const DetectRunOptions& o) {
  FK_CHECK(o.iters >= 1, "e2e: iters must be at least 1");
  const auto loaded = install_candidates(o.installs, o.backend);
  models::ModelSource src = models::resolve_model(o.model);
  if (o.dummy_weights) src.checkpoint.clear();
  std::unique_ptr<models::Model> m = models::create_model_from_config(src.config_json, src.source);
  models::vision::Yolov10Model& det = as_detector(*m, src, "e2e");
  const DetectWorkload w = detect_workload(o.workload);
  const int64_t s = detect_input_size(w, det), n = w.images;
  models::LoadOptions lo;
  lo.device = o.backend == DeviceType::cuda ? Device::cuda() : Device::cpu();
  lo.dtype = o.dtype;
  lo.checkpoint = src.checkpoint;
  lo.seed = o.seed;
  lo.max_seqs = n;
  det.load(lo);
  const auto& c = det.config();
  const Tensor images = Tensor::empty({n, s, s, 3}, lo.dtype, lo.device);
  fill_uniform(images.view(), kDetectInputSeed, 0, 0.0f, 1.0f);
  models::StepInputs in;
  in.tensors = {{"images", images.view()}};
  TensorView raw_view{};
  // One run as fk detect runs: the forward and the top-k on the host (copying the boxes
  // and scores synchronises).
  auto detect_once = [&] {
    det.plan(in, nullptr);
    raw_view = det.forward(in, nullptr);
    return models::vision::yolov10_detect(c, det.boxes_output(), det.scores_output());
  };
  std::vector<std::vector<Yolov10Detection>> dets;
  const std::vector<double> times = bench::time_calls(1, o.iters, [&] { dets = detect_once(); });
  const std::vector<float> raw = host_floats(raw_view);
  const std::vector<float> boxes = host_floats(det.boxes_output()), scores = host_floats(det.scores_output());
  const double elapsed = bench::median(times);
  json result = {{"pattern", "detect"},
                 {"outputs", {safetensors::hash_hex(safetensors::content_hash64(raw.data(), raw.size() * sizeof(float)))}},
                 {"elapsed_s", elapsed},
                 {"elapsed_s_iters", times},
                 {"images", n},
                 {"images_per_s", static_cast<double>(n) / elapsed},
                 {"backend", o.backend == DeviceType::cuda ? "cuda" : "cpu"},
                 {"installed", json::array()}};
  for (const auto& [op, lib] : o.installs) result["installed"].push_back({{"op", op}, {"library", lib.string()}});

  const int64_t anchors = c.anchors(), per = c.outputs_per_anchor();
  if (!o.teacher_out.empty()) {
    const Tensor r = host_f32(raw, {n, anchors, per}), b = host_f32(boxes, {n, anchors, 4}),
                 sc = host_f32(scores, {n, anchors, c.nc});
    safetensors::save(o.teacher_out, {{"raw", r.view()}, {"boxes", b.view()}, {"scores", sc.view()}});
  }
  if (!o.teacher_in.empty()) {
    const auto f = safetensors::File::open(o.teacher_in);
    const TensorView want_raw = f.view("raw"), want_boxes = f.view("boxes"), want_scores = f.view("scores");
    FK_CHECK(want_raw.numel() == static_cast<int64_t>(raw.size()) && want_boxes.numel() == static_cast<int64_t>(boxes.size()) &&
                 want_scores.numel() == static_cast<int64_t>(scores.size()),
             "e2e: the baseline's outputs (", want_raw.numel(), " raw values) do not match this run's ", raw.size());
    const std::vector<float> base_raw = host_floats(want_raw);
    // Per image: the raw output's relative L2 error, the worst image.
    double raw_err = 0, raw_cos = 1;
    const size_t image_values = static_cast<size_t>(anchors * per);
    for (int64_t i = 0; i < n; ++i) {
      const auto first = static_cast<std::ptrdiff_t>(static_cast<size_t>(i) * image_values);
      const std::vector<float> a(base_raw.begin() + first, base_raw.begin() + first + static_cast<std::ptrdiff_t>(image_values));
      const std::vector<float> b(raw.begin() + first, raw.begin() + first + static_cast<std::ptrdiff_t>(image_values));
      const Agreement g = agreement(a, b);
      if (!(g.rel_l2 <= raw_err)) raw_err = g.rel_l2;
      if (!(g.cosine >= raw_cos)) raw_cos = g.cosine;
    }
    const auto base_dets = models::vision::yolov10_detect(c, want_boxes, want_scores);
    const auto [agree, box_err] = detection_agreement(base_dets, dets);
    int64_t detections = 0;
    for (const auto& d : base_dets) detections += static_cast<int64_t>(d.size());
    result["agreement"] = {{"values", static_cast<int64_t>(raw.size())},
                           {"raw_rel_err", raw_err},
                           {"raw_min_cosine", raw_cos},
                           {"boxes_max_abs_err", max_abs_diff(host_floats(want_boxes), boxes)},
                           {"scores_max_abs_err", max_abs_diff(host_floats(want_scores), scores)},
                           {"detections", detections},
                           {"detection_agreement", agree},
                           {"matched_box_max_abs_err", box_err}};
  }
  return result;
}

json compare_detect_runs(const json& base, const json& cand) {
  return compare_output_runs(base, cand, {"images_per_s"},
                             {at_most("raw_rel_err", kMaxRawRelErr,
                                      "the head's raw output differs from the baseline's by a relative L2 error of "),
                              at_least("detection_agreement", kMinDetectionAgreement, "only ",
                                       " of the baseline's detections were selected")});
}

}  // namespace fk::e2e
