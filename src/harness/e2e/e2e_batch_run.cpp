#include "harness/e2e/e2e_batch_run.h"

#include <algorithm>
#include <cmath>

#include "core/safetensors/safetensors.h"
#include "fk/op_registry.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "harness/capture/capture_batch.h"
#include "harness/e2e/e2e_patterns.h"
#include "harness/sandbox/candidate.h"
#include "harness/time/stats.h"
#include "harness/time/timed_calls.h"
#include "models/encoder/embed_batch.h"
#include "models/encoder/xlm_roberta_model.h"
#include "models/registry.h"

namespace fk::e2e {

using nlohmann::json;

namespace {

// The smallest cosine between the rows of two [rows, cols] matrices (1 for no rows).
double min_row_cosine(const float* a, const float* b, int64_t rows, int64_t cols) {
  double min_cos = 1;
  for (int64_t r = 0; r < rows; ++r) {
    double dot = 0, na = 0, nb = 0;
    for (int64_t j = 0; j < cols; ++j) {
      const double x = a[r * cols + j], y = b[r * cols + j];
      dot += x * y, na += x * x, nb += y * y;
    }
    min_cos = std::min(min_cos, dot / std::max(std::sqrt(na * nb), 1e-30));
  }
  return min_cos;
}

}  // namespace

bool is_batch_model(const std::string& model) {
  return models::resolve_model(model).registration->pattern == models::RunPattern::batch;
}

json run_batch_workload(const BatchRunOptions& o) {
  FK_CHECK(o.iters >= 1, "e2e: iters must be at least 1");
  std::vector<std::unique_ptr<bench::LoadedCandidate>> loaded;
  for (const auto& [op, lib] : o.installs) {
    auto c = bench::LoadedCandidate::load(lib, op);
    OpRegistry::global().install(op, o.backend, c->run(), "candidate " + lib.filename().string());
    OpRegistry::global().install_plan(op, o.backend, c->plan());
    loaded.push_back(std::move(c));
  }
  const models::ModelSource src = models::resolve_model(o.model);
  std::unique_ptr<models::Model> m = models::create_model_from_config(src.config_json, src.source);
  auto* model = dynamic_cast<models::encoder::XlmRobertaModel*>(m.get());
  FK_CHECK(model != nullptr, "e2e: model '", o.model, "' is not a text encoder the Batch runs take");
  const auto& c = model->config();
  const BatchWorkload w = batch_workload(o.workload);
  // The same sequences on both sides (a fixed seed).
  const auto seqs = batch_sequences(w, c, 12345);
  int64_t tokens = 0;
  for (const auto& s : seqs) tokens += static_cast<int64_t>(s.size());
  models::LoadOptions lo;
  lo.device = o.backend == DeviceType::cuda ? Device::cuda() : Device::cpu();
  lo.dtype = o.dtype;
  lo.checkpoint = src.checkpoint;
  lo.max_tokens = tokens;
  lo.max_seqs = static_cast<int64_t>(seqs.size());
  model->load(lo);

  models::encoder::EmbedOptions eo;
  eo.hidden_states = true;
  std::vector<models::encoder::EncoderOutput> out;
  const std::vector<double> times =
      bench::time_calls(1, o.iters, [&] { out = models::encoder::embed_batch(*model, seqs, eo); });
  const int64_t H = c.hidden_size;
  json checksums = json::array();
  for (const auto& e : out)
    checksums.push_back(safetensors::hash_hex(
        safetensors::content_hash64(e.last_hidden_state.data(), e.last_hidden_state.size() * sizeof(float))));
  const double elapsed = bench::median(times);
  json result = {{"pattern", "batch"},
                 {"outputs", checksums},
                 {"elapsed_s", elapsed},
                 {"elapsed_s_iters", times},
                 {"sequences", static_cast<int64_t>(seqs.size())},
                 {"tokens", tokens},
                 {"sequences_per_s", static_cast<double>(seqs.size()) / elapsed},
                 {"tokens_per_s", static_cast<double>(tokens) / elapsed},
                 {"backend", o.backend == DeviceType::cuda ? "cuda" : "cpu"},
                 {"installed", json::array()}};
  for (const auto& [op, lib] : o.installs) result["installed"].push_back({{"op", op}, {"library", lib.string()}});

  // BGE-M3's heads, where the model has them: the per-token sparse weights and the ColBERT
  // vectors (every token's but the first); a ColBERT model's projected vectors (every token's).
  std::vector<float> hidden, dense, sparse, colbert;
  for (const auto& e : out) {
    hidden.insert(hidden.end(), e.last_hidden_state.begin(), e.last_hidden_state.end());
    dense.insert(dense.end(), e.dense.begin(), e.dense.end());
    sparse.insert(sparse.end(), e.sparse.begin(), e.sparse.end());
    colbert.insert(colbert.end(), e.colbert.begin(), e.colbert.end());
  }
  const int64_t B = static_cast<int64_t>(out.size());
  const bool heads = !sparse.empty(), multi_vector = !colbert.empty();
  const int64_t CW = model->has_colbert_projection() ? c.colbert->dim : H;  // a ColBERT vector's width
  if (!o.teacher_out.empty()) {
    const Tensor th = host_f32(hidden, {tokens, H}), td = host_f32(dense, {B, H});
    safetensors::NamedViews views = {{"hidden", th.view()}, {"dense", td.view()}};
    Tensor ts, tc;
    if (heads) {
      ts = host_f32(sparse, {static_cast<int64_t>(sparse.size())});
      views.push_back({"sparse", ts.view()});
    }
    if (multi_vector) {
      tc = host_f32(colbert, {static_cast<int64_t>(colbert.size()) / CW, CW});
      views.push_back({"colbert", tc.view()});
    }
    safetensors::save(o.teacher_out, views);
  }
  if (!o.teacher_in.empty()) {
    const auto f = safetensors::File::open(o.teacher_in);
    const TensorView want_h = f.view("hidden"), want_d = f.view("dense");
    FK_CHECK(want_h.shape[0] == tokens && want_h.shape[1] == H && want_d.shape[0] == B, "e2e: the baseline's ",
             want_h.shape[0], " hidden rows and ", want_d.shape[0], " dense vectors do not match this run's ", tokens,
             " and ", B);
    const auto* a = static_cast<const float*>(want_h.data);
    double worst = 0, sum_abs = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      double scale = 0, err = 0;
      for (int64_t j = 0; j < H; ++j) {
        const double x = a[t * H + j], y = hidden[static_cast<size_t>(t * H + j)];
        scale = std::max(scale, std::fabs(x));
        err = std::max(err, std::fabs(x - y));
        sum_abs += std::fabs(x - y);
      }
      worst = std::max(worst, err / std::max(scale, 1e-30));
    }
    const double min_cos = min_row_cosine(static_cast<const float*>(want_d.data), dense.data(), B, H);
    result["teacher_forced"] = {{"positions", tokens},
                                {"max_rel_err", worst},
                                {"mean_abs_err", sum_abs / static_cast<double>(tokens * H)},
                                {"min_cosine", min_cos}};
    FK_CHECK(f.contains("sparse") == heads && f.contains("colbert") == multi_vector, "e2e: the baseline run's ",
             "sparse and ColBERT outputs are not this run's (", f.contains("sparse") ? "sparse" : "no sparse", ", ",
             f.contains("colbert") ? "ColBERT" : "no ColBERT", " against ", heads ? "sparse" : "no sparse", ", ",
             multi_vector ? "ColBERT" : "no ColBERT", ")");
    if (heads) {
      // The sparse weights against the largest of them.
      const TensorView want_s = f.view("sparse");
      FK_CHECK(want_s.numel() == static_cast<int64_t>(sparse.size()),
               "e2e: the baseline's sparse weights do not match this run's in size");
      const auto* as = static_cast<const float*>(want_s.data);
      double scale = 0, err = 0;
      for (size_t i = 0; i < sparse.size(); ++i) {
        scale = std::max(scale, std::fabs(static_cast<double>(as[i])));
        err = std::max(err, std::fabs(static_cast<double>(as[i]) - sparse[i]));
      }
      result["teacher_forced"]["sparse_max_rel_err"] = err / std::max(scale, 1e-30);
    }
    if (multi_vector) {
      // Each ColBERT vector by its cosine.
      const TensorView want_c = f.view("colbert");
      FK_CHECK(want_c.numel() == static_cast<int64_t>(colbert.size()),
               "e2e: the baseline's ColBERT vectors do not match this run's in size");
      result["teacher_forced"]["colbert_min_cosine"] =
          min_row_cosine(static_cast<const float*>(want_c.data), colbert.data(), want_c.shape[0], CW);
    }
  }
  return result;
}

}  // namespace fk::e2e
