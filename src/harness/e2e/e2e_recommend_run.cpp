#include "harness/e2e/e2e_recommend_run.h"

#include <cmath>

#include "core/safetensors/safetensors.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/e2e/e2e_output_compare.h"
#include "harness/e2e/e2e_patterns.h"
#include "harness/time/stats.h"
#include "harness/time/timed_calls.h"
#include "models/recsys/dlrm/dlrm_predict.h"
#include "models/registry.h"

namespace fk::e2e {

using nlohmann::json;

namespace {

constexpr uint64_t kSampleSeed = 12345;  // both sides see the same samples

}  // namespace

json run_recommend_workload(const RecommendRunOptions& o) {
  FK_CHECK(o.iters >= 1, "e2e: iters must be at least 1");
  const auto loaded = install_candidates(o.installs, o.backend);
  models::ModelSource src = models::resolve_model(o.model);
  if (o.dummy_weights) src.checkpoint.clear();
  std::unique_ptr<models::Model> m = models::create_model_from_config(src.config_json, src.source);
  auto* model = dynamic_cast<models::recsys::DlrmModel*>(m.get());
  FK_CHECK(model != nullptr, "e2e: model '", o.model, "' is not a recommendation model these runs take");
  const RecommendWorkload w = recommend_workload(o.workload);
  models::LoadOptions lo;
  lo.device = o.backend == DeviceType::cuda ? Device::cuda() : Device::cpu();
  lo.dtype = o.dtype;
  lo.checkpoint = src.checkpoint;
  lo.seed = o.seed;
  lo.max_tokens = w.samples;
  lo.max_seqs = w.samples;
  model->load(lo);
  const models::recsys::DlrmBatch batch = models::recsys::dlrm_pack(*model, recommend_samples(w, model->config(), kSampleSeed));
  std::vector<models::recsys::DlrmPrediction> out;
  const std::vector<double> times =
      bench::time_calls(1, o.iters, [&] { out = models::recsys::dlrm_run(*model, batch); });
  std::vector<float> logits, probabilities;
  for (const auto& p : out) logits.push_back(p.logit), probabilities.push_back(p.probability);
  const double elapsed = bench::median(times);
  json result = {{"pattern", "recommend"},
                 {"outputs", {safetensors::hash_hex(safetensors::content_hash64(logits.data(),
                                                                                logits.size() * sizeof(float)))}},
                 {"elapsed_s", elapsed},
                 {"elapsed_s_iters", times},
                 {"samples", w.samples},
                 {"samples_per_s", static_cast<double>(w.samples) / elapsed},
                 {"backend", o.backend == DeviceType::cuda ? "cuda" : "cpu"},
                 {"installed", json::array()}};
  for (const auto& [op, lib] : o.installs) result["installed"].push_back({{"op", op}, {"library", lib.string()}});
  if (!o.teacher_out.empty()) {
    const Tensor l = host_f32(logits, {w.samples}), p = host_f32(probabilities, {w.samples});
    safetensors::save(o.teacher_out, {{"logits", l.view()}, {"probabilities", p.view()}});
  }
  if (!o.teacher_in.empty()) {
    const auto f = safetensors::File::open(o.teacher_in);
    const std::vector<float> base_logits = host_floats(f.view("logits"));
    const std::vector<float> base_probs = host_floats(f.view("probabilities"));
    const Agreement gl = agreement(base_logits, logits), gp = agreement(base_probs, probabilities);
    double logit_err = 0;
    for (size_t i = 0; i < logits.size(); ++i) {
      const double e = std::fabs(static_cast<double>(logits[i]) - base_logits[i]) / (1 + std::fabs(base_logits[i]));
      if (!(e <= logit_err)) logit_err = e;  // NaN sticks
      if (std::isnan(logit_err)) break;
    }
    result["agreement"] = {{"values", static_cast<int64_t>(logits.size())},
                           {"logits_err", logit_err},
                           {"logits_rel_l2", gl.rel_l2},
                           {"probability_max_abs_err", gp.max_abs}};
  }
  return result;
}

json compare_recommend_runs(const json& base, const json& cand) {
  return compare_output_runs(
      base, cand, {"samples_per_s"},
      {at_most("logits_err", kMaxLogitErr, "a logit differs from the baseline's by ", " of 1 + |logit|"),
       at_most("probability_max_abs_err", kMaxProbabilityAbsErr,
               "a click probability differs from the baseline's by ")});
}

}  // namespace fk::e2e
