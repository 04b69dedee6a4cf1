#include "harness/e2e/e2e_patterns.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/capture/capture_batch.h"
#include "harness/capture/capture_denoise.h"
#include "harness/capture/capture_detect.h"
#include "harness/e2e/e2e_compare.h"
#include "harness/e2e/e2e_denoise_run.h"
#include "harness/e2e/e2e_classify_run.h"
#include "harness/e2e/e2e_detect_run.h"
#include "harness/e2e/e2e_recommend_run.h"
#include "harness/e2e/repeat_runs.h"
#include "harness/e2e/workload.h"
#include "harness/time/stats.h"
#include "models/registry.h"

namespace fk::e2e {

using nlohmann::json;

E2eKind e2e_kind(const std::string& model) {
  const models::ModelSource src = models::resolve_model(model);
  switch (src.registration->pattern) {
    case models::RunPattern::denoise: return E2eKind::denoise;
    case models::RunPattern::batch:
      if (is_detector(src)) return E2eKind::detect;
      if (is_classifier(src)) return E2eKind::classify;
      return is_recommender(src) ? E2eKind::recommend : E2eKind::text_encoder;
    default: return E2eKind::generate;
  }
}

json e2e_workload_json(const std::string& model, const std::string& workload) {
  switch (e2e_kind(model)) {
    case E2eKind::denoise: return denoise_workload(workload).to_json();
    case E2eKind::detect: return detect_workload(workload).to_json();
    case E2eKind::recommend: return recommend_workload(workload).to_json();
    case E2eKind::classify: return classify_workload(workload).to_json();
    case E2eKind::text_encoder: {
      const BatchWorkload w = batch_workload(workload);
      return {{"name", w.name}, {"sequence_lengths", w.lengths}};
    }
    case E2eKind::generate: break;
  }
  return to_json(workload_spec(workload));
}

std::vector<std::unique_ptr<bench::LoadedCandidate>> install_candidates(
    const std::vector<std::pair<std::string, std::filesystem::path>>& installs, DeviceType backend) {
  std::vector<std::unique_ptr<bench::LoadedCandidate>> loaded;
  for (const auto& [op, lib] : installs) {
    auto c = bench::LoadedCandidate::load(lib, op);
    OpRegistry::global().install(op, backend, c->run(), "candidate " + lib.filename().string());
    OpRegistry::global().install_plan(op, backend, c->plan());
    loaded.push_back(std::move(c));
  }
  return loaded;
}

json compare_pattern_runs(const json& base, const json& cand) {
  const std::string pattern = base.value("pattern", "");
  if (pattern == "denoise") return compare_denoise_runs(base, cand);
  if (pattern == "detect") return compare_detect_runs(base, cand);
  if (pattern == "recommend") return compare_recommend_runs(base, cand);
  if (pattern == "classify") return compare_classify_runs(base, cand);
  return compare_runs(base, cand);
}

Agreement agreement(const std::vector<float>& a, const std::vector<float>& b) {
  FK_CHECK(a.size() == b.size(), "e2e: the baseline's ", a.size(), " output values and this run's ", b.size(),
           " differ in number");
  double err = 0, norm_a = 0, norm_b = 0, dot = 0, worst = 0;
  bool finite = true;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i], d = x - y;
    finite = finite && std::isfinite(y);
    err += d * d, norm_a += x * x, norm_b += y * y, dot += x * y;
    worst = std::max(worst, std::fabs(d));
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Agreement g;
  g.rel_l2 = finite ? std::sqrt(err) / std::max(std::sqrt(norm_a), 1e-30) : nan;
  g.cosine = finite ? dot / std::max(std::sqrt(norm_a * norm_b), 1e-30) : nan;
  g.max_abs = finite ? worst : nan;
  return g;
}

Tensor host_f32(const std::vector<float>& values, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::f32);
  FK_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "e2e: ", values.size(), " values for a tensor of ",
           t.numel());
  std::copy(values.begin(), values.end(), t.data_as<float>());
  return t;
}

std::vector<float> host_floats(const TensorView& v) {
  FK_CHECK(v.is_contiguous(), "e2e: internal: an output view is not contiguous: ", describe(v));
  std::vector<char> bytes(static_cast<size_t>(v.nbytes()));
  if (!bytes.empty()) rt::memcpy_sync(bytes.data(), Device::cpu(), v.data, v.device, bytes.size());
  const size_t es = dtype_size(v.dtype);
  std::vector<float> out(static_cast<size_t>(v.numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(load_element(bytes.data() + i * es, v.dtype));
  return out;
}

}  // namespace fk::e2e
