#include "harness/e2e/e2e_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "harness/e2e/teacher_forcing.h"
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

  // Teacher forcing over the first requests: the baseline's sequences at positions spread
  // over each, packed into prefills as the engine packs prompts (teacher_forced_logits).
  const int64_t K = std::min<int64_t>(o.workload.teacher_forced, static_cast<int64_t>(reqs.size()));
  if (!o.teacher_out.empty()) {
    std::vector<std::vector<int64_t>> seqs, positions;
    for (int64_t k = 0; k < K; ++k) {
      std::vector<int64_t> seq = reqs[static_cast<size_t>(k)].prompt;
      seq.insert(seq.end(), outputs[static_cast<size_t>(k)].begin(), outputs[static_cast<size_t>(k)].end());
      positions.push_back(spread_positions(static_cast<int64_t>(seq.size()), o.workload.teacher_positions));
      seqs.push_back(std::move(seq));
    }
    const auto logits = teacher_forced_logits(e, seqs, positions);
    std::vector<Tensor> keep;
    safetensors::NamedViews views;
    for (size_t k = 0; k < seqs.size(); ++k) {
      const auto P = static_cast<int64_t>(positions[k].size());
      Tensor tl = Tensor::empty({P, V}, DType::f32), ts = Tensor::empty({static_cast<int64_t>(seqs[k].size())}, DType::i64),
             tp = Tensor::empty({P}, DType::i64);
      std::copy(logits[k].begin(), logits[k].end(), tl.data_as<float>());
      std::copy(seqs[k].begin(), seqs[k].end(), ts.data_as<int64_t>());
      std::copy(positions[k].begin(), positions[k].end(), tp.data_as<int64_t>());
      views.push_back({"logits." + std::to_string(k), tl});
      views.push_back({"tokens." + std::to_string(k), ts});
      views.push_back({"positions." + std::to_string(k), tp});
      for (const Tensor& t : {tl, ts, tp}) keep.push_back(t);
    }
    // The decode path's logits over each sequence's generated tokens (decode_forced_logits).
    std::vector<std::vector<int64_t>> dseqs;
    std::vector<int64_t> dn;
    std::vector<size_t> dk;
    for (size_t k = 0; k < seqs.size(); ++k) {
      const int64_t n = decode_forced_count(static_cast<int64_t>(seqs[k].size()),
                                            static_cast<int64_t>(outputs[k].size()), o.workload.teacher_positions);
      if (n == 0) continue;
      dseqs.push_back(seqs[k]);
      dn.push_back(n);
      dk.push_back(k);
    }
    const auto dlogits = dseqs.empty() ? std::vector<std::vector<float>>{} : decode_forced_logits(e, dseqs, dn);
    for (size_t m = 0; m < dk.size(); ++m) {
      Tensor t = Tensor::empty({dn[m], V}, DType::f32);
      std::copy(dlogits[m].begin(), dlogits[m].end(), t.data_as<float>());
      views.push_back({"decode_logits." + std::to_string(dk[m]), t});
      keep.push_back(t);
    }
    // Every request's greedy tokens, for the candidate's divergence check (divergence()).
    for (size_t i = 0; i < outputs.size(); ++i) {
      Tensor t = Tensor::empty({static_cast<int64_t>(outputs[i].size())}, DType::i64);
      std::copy(outputs[i].begin(), outputs[i].end(), t.data_as<int64_t>());
      views.push_back({"output." + std::to_string(i), t});
      keep.push_back(t);
    }
    safetensors::save(o.teacher_out, views);
  }
  if (!o.teacher_in.empty()) {
    const auto f = safetensors::File::open(o.teacher_in);
    std::vector<TensorView> wanted;
    std::vector<std::vector<int64_t>> seqs, positions;
    for (int64_t k = 0;; ++k) {
      const std::string ln = "logits." + std::to_string(k);
      if (!f.contains(ln)) break;
      const TensorView toks = f.view("tokens." + std::to_string(k)), at = f.view("positions." + std::to_string(k));
      wanted.push_back(f.view(ln));
      seqs.emplace_back(static_cast<const int64_t*>(toks.data), static_cast<const int64_t*>(toks.data) + toks.numel());
      positions.emplace_back(static_cast<const int64_t*>(at.data), static_cast<const int64_t*>(at.data) + at.numel());
    }
    LogitErrors prefill;
    const auto got = seqs.empty() ? std::vector<std::vector<float>>{} : teacher_forced_logits(e, seqs, positions);
    for (size_t k = 0; k < seqs.size(); ++k)
      prefill.add(static_cast<const float*>(wanted[k].data), got[k].data(), static_cast<int64_t>(positions[k].size()), V);
    result["teacher_forced"] = prefill.to_json();
    // The same sequences through the decode path, against the baseline's decode path.
    std::vector<std::vector<int64_t>> dseqs;
    std::vector<int64_t> dn;
    std::vector<TensorView> dwant;
    for (size_t k = 0; k < seqs.size(); ++k) {
      const std::string name = "decode_logits." + std::to_string(k);
      if (!f.contains(name)) continue;
      dwant.push_back(f.view(name));
      dseqs.push_back(seqs[k]);
      dn.push_back(dwant.back().shape[0]);
    }
    LogitErrors decode;
    const auto dgot = dseqs.empty() ? std::vector<std::vector<float>>{} : decode_forced_logits(e, dseqs, dn);
    for (size_t m = 0; m < dseqs.size(); ++m)
      decode.add(static_cast<const float*>(dwant[m].data), dgot[m].data(), dn[m], V);
    result["decode_forced"] = decode.to_json();
    result["divergence"] = divergence(e, f, reqs, outputs);
  }
  return result;
}

}  // namespace fk::e2e
