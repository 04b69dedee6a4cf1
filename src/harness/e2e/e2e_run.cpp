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

// The teacher-forced logits of `seqs` (at positions[i] of each), the sequences packed
// into as few prefills as fit a step (its token budget, and one logit row per position
// within max_num_seqs), in order: packed sequences that see each other's state or KV (a
// varlen kernel ignoring its sequence boundaries) then move the logits, where sequences
// run one at a time would not show it.
std::vector<std::vector<float>> teacher_forced_logits(engine::Engine& e, const std::vector<std::vector<int64_t>>& seqs,
                                                      const std::vector<std::vector<int64_t>>& positions) {
  const int64_t max_tokens = std::min(e.config().max_num_batched_tokens, e.max_model_len()),
                max_rows = e.config().max_num_seqs;
  std::vector<std::vector<float>> out;
  for (size_t begin = 0; begin < seqs.size();) {
    size_t end = begin;
    int64_t tokens = 0, rows = 0;
    while (end < seqs.size() && (end == begin || (tokens + static_cast<int64_t>(seqs[end].size()) <= max_tokens &&
                                                  rows + static_cast<int64_t>(positions[end].size()) <= max_rows))) {
      tokens += static_cast<int64_t>(seqs[end].size());
      rows += static_cast<int64_t>(positions[end].size());
      ++end;
    }
    const std::vector<std::vector<int64_t>> group(seqs.begin() + static_cast<std::ptrdiff_t>(begin),
                                                  seqs.begin() + static_cast<std::ptrdiff_t>(end));
    const std::vector<std::vector<int64_t>> at(positions.begin() + static_cast<std::ptrdiff_t>(begin),
                                               positions.begin() + static_cast<std::ptrdiff_t>(end));
    for (auto& l : e.prefill_logits_packed(group, at)) out.push_back(std::move(l));
    begin = end;
  }
  return out;
}

// The decode path's teacher-forced logits of `seqs` (their last last_n[i] positions, one
// decode step each, the sequences batched), in groups that fit a step.
std::vector<std::vector<float>> decode_forced_logits(engine::Engine& e, const std::vector<std::vector<int64_t>>& seqs,
                                                     const std::vector<int64_t>& last_n) {
  const int64_t max_tokens = e.config().max_num_batched_tokens, max_seqs = e.config().max_num_seqs;
  std::vector<std::vector<float>> out;
  for (size_t begin = 0; begin < seqs.size();) {
    size_t end = begin;
    int64_t tokens = 0;
    while (end < seqs.size() && static_cast<int64_t>(end - begin) < max_seqs &&
           (end == begin || tokens + static_cast<int64_t>(seqs[end].size()) - last_n[end] <= max_tokens)) {
      tokens += static_cast<int64_t>(seqs[end].size()) - last_n[end];
      ++end;
    }
    const std::vector<std::vector<int64_t>> group(seqs.begin() + static_cast<std::ptrdiff_t>(begin),
                                                  seqs.begin() + static_cast<std::ptrdiff_t>(end));
    const std::vector<int64_t> n(last_n.begin() + static_cast<std::ptrdiff_t>(begin),
                                 last_n.begin() + static_cast<std::ptrdiff_t>(end));
    for (auto& l : e.decode_logits_packed(group, n)) out.push_back(std::move(l));
    begin = end;
  }
  return out;
}

// Worst and mean distances of logits `got` from `want`, both [rows, V] row-major.
struct LogitErrors {
  LogitDistance worst;
  double sum_abs = 0, sum_kl = 0;
  int64_t rows = 0;
  void add(const float* want, const float* got, int64_t rows_, int64_t V) {
    for (int64_t p = 0; p < rows_; ++p) {
      const LogitDistance d = logit_distance(want + p * V, got + p * V, V);
      worst.max_rel_err = std::max(worst.max_rel_err, d.max_rel_err);
      worst.kl = std::max(worst.kl, d.kl);
      sum_abs += d.mean_abs_err;
      sum_kl += d.kl;
      ++rows;
    }
  }
  json to_json() const {
    return {{"positions", rows},
            {"max_rel_err", worst.max_rel_err},
            {"mean_abs_err", rows ? sum_abs / static_cast<double>(rows) : 0.0},
            {"mean_kl", rows ? sum_kl / static_cast<double>(rows) : 0.0},
            {"max_kl", worst.kl}};
  }
};

// The decode-forced positions of a teacher sequence: its generated tokens (at most n), each
// fed by a decode step; none for a sequence of one token.
int64_t decode_forced_count(int64_t length, int64_t generated, int64_t n) {
  return std::max<int64_t>(0, std::min({n, generated, length - 1}));
}

// n positions of a sequence of `length` tokens, spread evenly from its first to its last:
// the first tokens are where state or KV leaked from a neighbour in the batch shows most
// (it decays further in), the last ones where the generated tokens are judged.
std::vector<int64_t> spread_positions(int64_t length, int64_t n) {
  n = std::min(n, length);
  if (n == 1) return {length - 1};
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) p[static_cast<size_t>(j)] = j * (length - 1) / (n - 1);
  return p;
}

// Where a request's greedy tokens leave the baseline's, whether that was a near-tie. The
// decode steps (their attention, state updates and GEMMs) make the tokens but never the
// teacher-forced logits, which come from prefills; so each diverging request is teacher
// forced on the baseline's tokens up to its first difference, and the margin by which the
// baseline's token leads the candidate's there (relative to the row's largest |logit|, as
// logit_distance) says whether the candidate's choice was a rounding flip or a wrong step.
json divergence(engine::Engine& e, const safetensors::File& teacher, const std::vector<WorkloadRequest>& reqs,
                const std::vector<std::vector<int64_t>>& outputs) {
  struct Case {
    size_t request;
    int64_t output, expected, chosen;
  };
  std::vector<Case> cases;
  std::vector<std::vector<int64_t>> prefixes, last;
  for (size_t i = 0; i < reqs.size(); ++i) {
    const std::string name = "output." + std::to_string(i);
    FK_CHECK(teacher.contains(name), "e2e: the teacher file holds no ", name, " (written by an older fk?)");
    const TensorView b = teacher.view(name);
    const auto* base = static_cast<const int64_t*>(b.data);
    const std::vector<int64_t>& mine = outputs[i];
    const int64_t n = std::min<int64_t>(b.numel(), static_cast<int64_t>(mine.size()));
    int64_t d = 0;
    while (d < n && base[d] == mine[static_cast<size_t>(d)]) ++d;
    if (d == n) continue;  // the same tokens (a length difference is token agreement's to report)
    std::vector<int64_t> prefix = reqs[i].prompt;
    prefix.insert(prefix.end(), base, base + d);
    last.push_back({static_cast<int64_t>(prefix.size()) - 1});
    prefixes.push_back(std::move(prefix));
    cases.push_back({i, d, base[d], mine[static_cast<size_t>(d)]});
  }
  json out = {{"requests", static_cast<int64_t>(reqs.size())}, {"diverged", static_cast<int64_t>(cases.size())},
              {"max_margin", 0.0}};
  if (cases.empty()) return out;
  const auto rows = teacher_forced_logits(e, prefixes, last);
  double worst = -1;
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::vector<float>& row = rows[k];
    double scale = 0;
    for (float x : row) scale = std::max(scale, std::fabs(static_cast<double>(x)));
    const Case& c = cases[k];
    const double margin = (static_cast<double>(row[static_cast<size_t>(c.expected)]) - row[static_cast<size_t>(c.chosen)]) /
                          std::max(scale, 1e-30);
    if (margin > worst) {
      worst = margin;
      out["max_margin"] = margin;
      out["worst"] = {{"request", c.request}, {"output", c.output}, {"baseline_token", c.expected},
                      {"candidate_token", c.chosen}, {"margin", margin}};
    }
  }
  return out;
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
