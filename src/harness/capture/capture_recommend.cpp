#include "harness/capture/capture_recommend.h"

#include <random>

#include "fk/status.h"

namespace fk::e2e {

RecommendWorkload recommend_workload(const std::string& name) {
  RecommendWorkload w;
  w.name = name;
  if (name == "tiny") return w;
  const auto x = name.find('x');
  bool ok = x != std::string::npos && x > 0 && x + 1 < name.size();
  if (ok) {
    try {
      size_t used = 0;
      w.samples = std::stoll(name.substr(0, x), &used);
      ok = used == x;
      w.bag_size = std::stoll(name.substr(x + 1), &used);
      ok = ok && used == name.size() - x - 1;
    } catch (const std::exception&) {
      ok = false;
    }
  }
  FK_CHECK(ok && w.samples >= 1 && w.bag_size >= 0, "workload '", name, "' is not one a recommendation model ",
           "takes: tiny, or BxL (B samples with bags of L ids, e.g. 2048x1)");
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
