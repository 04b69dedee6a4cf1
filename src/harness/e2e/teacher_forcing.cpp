#include "harness/e2e/teacher_forcing.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "fk/status.h"

namespace fk::e2e {

using nlohmann::json;

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

int64_t decode_forced_count(int64_t length, int64_t generated, int64_t n) {
  return std::max<int64_t>(0, std::min({n, generated, length - 1}));
}

std::vector<int64_t> spread_positions(int64_t length, int64_t n) {
  n = std::min(n, length);
  if (n == 1) return {length - 1};
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) p[static_cast<size_t>(j)] = j * (length - 1) / (n - 1);
  return p;
}

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

void LogitErrors::add(const float* want, const float* got, int64_t n, int64_t V) {
  for (int64_t p = 0; p < n; ++p) {
    const LogitDistance d = logit_distance(want + p * V, got + p * V, V);
    worst.max_rel_err = std::max(worst.max_rel_err, d.max_rel_err);
    worst.kl = std::max(worst.kl, d.kl);
    sum_abs += d.mean_abs_err;
    sum_kl += d.kl;
    ++rows;
  }
}

json LogitErrors::to_json() const {
  return {{"positions", rows},
          {"max_rel_err", worst.max_rel_err},
          {"mean_abs_err", rows ? sum_abs / static_cast<double>(rows) : 0.0},
          {"mean_kl", rows ? sum_kl / static_cast<double>(rows) : 0.0},
          {"max_kl", worst.kl}};
}

}  // namespace fk::e2e
