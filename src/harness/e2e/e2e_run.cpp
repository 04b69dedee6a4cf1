#include "harness/e2e/e2e_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "harness/sandbox/candidate.h"
#include "fk/op_registry.h"
#include "core/safetensors/safetensors.h"
#include "fk/status.h"

namespace fk::e2e {

using nlohmann::json;

LogitDistance logit_distance(const float* a, const float* b, int64_t n) {
  LogitDistance d;
  double scale = 0, amax = -INFINITY, bmax = -INFINITY, sum_abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    scale = std::max(scale, std::fabs(static_cast<double>(a[i])));
    d.max_rel_err = std::max(d.max_rel_err, std::fabs(static_cast<double>(a[i]) - b[i]));
    sum_abs += std::fabs(static_cast<double>(a[i]) - b[i]);
    amax = std::max(amax, static_cast<double>(a[i]));
    bmax = std::max(bmax, static_cast<double>(b[i]));
  }
  d.max_rel_err /= std::max(scale, 1e-30);
  d.mean_abs_err = sum_abs / static_cast<double>(n);
  // log-sum-exp of both rows, then KL = sum p_a (log p_a - log p_b).
  double za = 0, zb = 0;
  for (int64_t i = 0; i < n; ++i) {
    za += std::exp(a[i] - amax);
    zb += std::exp(b[i] - bmax);
  }
  const double lza = amax + std::log(za), lzb = bmax + std::log(zb);
  for (int64_t i = 0; i < n; ++i) {
    const double la = a[i] - lza, lb = b[i] - lzb;
    d.kl += std::exp(la) * (la - lb);
  }
  d.kl = std::max(d.kl, 0.0);
  return d;
}

namespace {

std::vector<std::unique_ptr<bench::LoadedCandidate>> install(const RunOptions& o) {
  std::vector<std::unique_ptr<bench::LoadedCandidate>> loaded;
  for (const auto& [op, lib] : o.installs) {
    auto c = bench::LoadedCandidate::load(lib, op);
    OpRegistry::global().install(op, o.engine.backend, c->run(), "candidate " + lib.filename().string());
    OpRegistry::global().install_plan(op, o.engine.backend, c->plan());
    loaded.push_back(std::move(c));
  }
  return loaded;
}

}  // namespace

json run_workload(const RunOptions& o) {
  const auto loaded = install(o);
  engine::Engine e(o.engine);
  const int64_t V = e.spec().config.vocab_size;
  const auto reqs = make_requests(o.workload, V, e.max_model_len());
  engine::SamplingParams sp;
  sp.temperature = 0;
  sp.ignore_eos = true;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < reqs.size(); ++i) {
    sp.max_tokens = reqs[i].max_tokens;
    e.add_request(reqs[i].prompt, sp, concat("r", i));  // the id carries the request's index
  }
  std::vector<std::vector<int64_t>> outputs(reqs.size());
  std::vector<double> ttft(reqs.size()), e2e(reqs.size());
  int64_t out_tokens = 0;
  while (e.has_unfinished())
    for (auto& r : e.step()) {
      const size_t i = static_cast<size_t>(std::stoll(r.id.substr(1)));
      out_tokens += static_cast<int64_t>(r.output_tokens.size());
      ttft[i] = r.first_token_s - r.arrival_s;
      e2e[i] = r.finished_s - r.arrival_s;
      outputs[i] = std::move(r.output_tokens);
    }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  json result = {{"outputs", outputs},
                 {"elapsed_s", elapsed},
                 {"output_tokens", out_tokens},
                 {"output_tokens_per_s", static_cast<double>(out_tokens) / elapsed},
                 {"ttft_s", ttft},
                 {"e2e_s", e2e},
                 {"backend", o.engine.backend == DeviceType::cuda ? "cuda" : "cpu"},
                 {"installed", json::array()}};
  for (const auto& [op, lib] : o.installs) result["installed"].push_back({{"op", op}, {"library", lib.string()}});

  // Teacher forcing over the first requests: the baseline's sequences, the last positions.
  const int64_t K = std::min<int64_t>(o.workload.teacher_forced, static_cast<int64_t>(reqs.size()));
  if (!o.teacher_out.empty()) {
    std::vector<Tensor> keep;
    safetensors::NamedViews views;
    for (int64_t k = 0; k < K; ++k) {
      std::vector<int64_t> seq = reqs[static_cast<size_t>(k)].prompt;
      seq.insert(seq.end(), outputs[static_cast<size_t>(k)].begin(), outputs[static_cast<size_t>(k)].end());
      const int64_t P = std::min<int64_t>(o.workload.teacher_positions, static_cast<int64_t>(seq.size()));
      const std::vector<float> logits = e.prefill_logits(seq, P);
      Tensor tl = Tensor::empty({P, V}, DType::f32), ts = Tensor::empty({static_cast<int64_t>(seq.size())}, DType::i64);
      std::copy(logits.begin(), logits.end(), tl.data_as<float>());
      std::copy(seq.begin(), seq.end(), ts.data_as<int64_t>());
      views.push_back({"logits." + std::to_string(k), tl});
      views.push_back({"tokens." + std::to_string(k), ts});
      keep.push_back(tl);
      keep.push_back(ts);
    }
    safetensors::save(o.teacher_out, views);
  }
  if (!o.teacher_in.empty()) {
    const auto f = safetensors::File::open(o.teacher_in);
    LogitDistance worst;
    double sum_abs = 0, sum_kl = 0;
    int64_t rows = 0;
    for (int64_t k = 0;; ++k) {
      const std::string ln = "logits." + std::to_string(k), tn = "tokens." + std::to_string(k);
      if (!f.contains(ln)) break;
      const TensorView want = f.view(ln), toks = f.view(tn);
      const std::vector<int64_t> seq(static_cast<const int64_t*>(toks.data),
                                     static_cast<const int64_t*>(toks.data) + toks.numel());
      const std::vector<float> got = e.prefill_logits(seq, want.shape[0]);
      for (int64_t p = 0; p < want.shape[0]; ++p) {
        const LogitDistance d = logit_distance(static_cast<const float*>(want.data) + p * V, got.data() + p * V, V);
        worst.max_rel_err = std::max(worst.max_rel_err, d.max_rel_err);
        sum_abs += d.mean_abs_err;
        sum_kl += d.kl;
        worst.kl = std::max(worst.kl, d.kl);
        ++rows;
      }
    }
    result["teacher_forced"] = {{"positions", rows},
                                {"max_rel_err", worst.max_rel_err},
                                {"mean_abs_err", rows ? sum_abs / static_cast<double>(rows) : 0.0},
                                {"mean_kl", rows ? sum_kl / static_cast<double>(rows) : 0.0},
                                {"max_kl", worst.kl}};
  }
  return result;
}

}  // namespace fk::e2e
