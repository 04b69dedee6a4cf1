#include "harness/e2e/e2e_recommend_run.h"

#include <chrono>
#include <cmath>

#include "core/safetensors/safetensors.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/e2e/e2e_patterns.h"
#include "harness/time/stats.h"
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
  std::vector<models::recsys::DlrmPrediction> out = models::recsys::dlrm_run(*model, batch);  // warm-up
  std::vector<double> times;
  for (int i = 0; i < o.iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    out = models::recsys::dlrm_run(*model, batch);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
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
  json out;
  const double be = base.at("elapsed_s").get<double>(), ce = cand.at("elapsed_s").get<double>();
  out["speedup"] = {{"throughput", be / ce}, {"latency", be / ce}, {"elapsed", be / ce}};
  out["baseline"] = {{"elapsed_s", be}, {"samples_per_s", base["samples_per_s"]}};
  out["candidate"] = {{"elapsed_s", ce}, {"samples_per_s", cand["samples_per_s"]}};
  const json g = cand.value("agreement", json::object());
  out["agreement"] = g;
  out["bounds"] = {{"logits_err", kMaxLogitErr}, {"probability_max_abs_err", kMaxProbabilityAbsErr}};
  // A NaN is stored as null: no bound passes it.
  auto value = [&](const char* k) { return g.contains(k) && g[k].is_number() ? g[k].get<double>() : 1e300; };
  std::string verdict = "PASSED", reason;
  if (g.empty() || g.value("values", 0) == 0) {
    verdict = "INCORRECT";
    reason = "no outputs were compared";
  } else if (!within(value("logits_err"), kMaxLogitErr)) {
    verdict = "INCORRECT";
    reason = concat("a logit differs from the baseline's by ", g["logits_err"].dump(), " of 1 + |logit| (bound ",
                    kMaxLogitErr, ")");
  } else if (!within(value("probability_max_abs_err"), kMaxProbabilityAbsErr)) {
    verdict = "INCORRECT";
    reason = concat("a click probability differs from the baseline's by ", g["probability_max_abs_err"].dump(),
                    " (bound ", kMaxProbabilityAbsErr, ")");
  }
  out["verdict"] = verdict;
  if (!reason.empty()) out["reason"] = reason;
  return out;
}

}  // namespace fk::e2e
