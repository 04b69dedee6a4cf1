#include "harness/capture/capture_recommend.h"

#include <random>

#include "fk/status.h"

namespace fk::e2e {

RecommendWorkload recommend_workload(const std::string& name) {
  RecommendWorkload w;
  w.name = name;
  if (name == "tiny") return w;
  const std::string refusal = concat("capture: recommendation workload '", name, "' is not tiny, or BxL (B samples with bags of L ids, two positive integers, e.g. 2048x1)");
  const size_t x = name.find('x');
  FK_CHECK(x != std::string::npos, refusal);
  w.samples = workload_count(std::string_view(name).substr(0, x), refusal);
  w.bag_size = workload_count(std::string_view(name).substr(x + 1), refusal);
  return w;
}

bool is_recommender(const models::ModelSource& model) { return model.registration->architecture == "dlrm"; }

std::vector<models::recsys::DlrmSample> recommend_samples(const RecommendWorkload& w,
                                                          const models::recsys::DlrmConfig& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dense(0.f, 4.f);
  std::vector<models::recsys::DlrmSample> out(static_cast<size_t>(w.samples));
  for (auto& s : out) {
    for (int64_t k = 0; k < c.dense_features; ++k) s.dense.push_back(dense(rng));
    for (int64_t rows : c.table_sizes) {
      std::uniform_int_distribution<int64_t> id(0, rows - 1);
      std::vector<int64_t> bag;
      for (int64_t i = 0; i < w.bag_size; ++i) bag.push_back(id(rng));
      s.sparse.push_back(std::move(bag));
    }
  }
  return out;
}

CaptureResult capture_recommender(const models::ModelSource& model, const RecommendWorkload& w,
                                  const RecommendCaptureOptions& options) {
  std::unique_ptr<models::Model> m = models::create_model_from_config(model.config_json, model.source);
  auto* dlrm = dynamic_cast<models::recsys::DlrmModel*>(m.get());
  FK_CHECK(dlrm != nullptr, "capture: model '", model.source, "' is not a recommendation model");
  models::LoadOptions lo;
  lo.device = options.backend == DeviceType::cuda ? Device::cuda() : Device::cpu();
  lo.dtype = options.dtype;
  lo.checkpoint = model.checkpoint;
  lo.seed = options.seed;
  lo.max_tokens = w.samples;
  lo.max_seqs = w.samples;
  dlrm->load(lo);
  const models::recsys::DlrmBatch batch =
      models::recsys::dlrm_pack(*dlrm, recommend_samples(w, dlrm->config(), options.seed + 1));
  auto forward = [&] { models::recsys::dlrm_run(*dlrm, batch); };
  forward();  // unrecorded: lazy set-up (algorithm choice, workspaces) is no op time
  return capture_calls(forward, options.backend == DeviceType::cuda, dlrm->task_category());
}

}  // namespace fk::e2e
