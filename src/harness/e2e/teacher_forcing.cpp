#include "harness/e2e/teacher_forcing.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "fk/status.h"

namespace fk::e2e {

using nlohmann::json;

namespace {

// Consecutive groups [begin, end) of sequences that fit one engine step each: their
// tokens summed at most max_tokens and their logit rows at most max_rows (a group holds at
// least one sequence, whatever it costs).
std::vector<std::pair<size_t, size_t>> step_groups(const std::vector<int64_t>& tokens, const std::vector<int64_t>& rows,
                                                   int64_t max_tokens, int64_t max_rows) {
  std::vector<std::pair<size_t, size_t>> groups;
  for (size_t begin = 0; begin < tokens.size();) {
    size_t end = begin;
    int64_t t = 0, r = 0;
    while (end < tokens.size() && (end == begin || (t + tokens[end] <= max_tokens && r + rows[end] <= max_rows))) {
      t += tokens[end];
      r += rows[end];
      ++end;
    }
    groups.emplace_back(begin, end);
    begin = end;
  }
  return groups;
}

template <class T>
std::vector<T> slice(const std::vector<T>& v, std::pair<size_t, size_t> range) {
  return {v.begin() + static_cast<std::ptrdiff_t>(range.first), v.begin() + static_cast<std::ptrdiff_t>(range.second)};
}

}  // namespace

std::vector<std::vector<float>> teacher_forced_logits(engine::Engine& e, const std::vector<std::vector<int64_t>>& seqs,
                                                      const std::vector<std::vector<int64_t>>& positions) {
  std::vector<int64_t> tokens, rows;
  for (size_t i = 0; i < seqs.size(); ++i) {
    tokens.push_back(static_cast<int64_t>(seqs[i].size()));
    rows.push_back(static_cast<int64_t>(positions[i].size()));
  }
  std::vector<std::vector<float>> out;
  for (const auto& g : step_groups(tokens, rows, std::min(e.config().max_num_batched_tokens, e.max_model_len()),
                                   e.config().max_num_seqs))
    for (auto& l : e.prefill_logits_packed(slice(seqs, g), slice(positions, g))) out.push_back(std::move(l));
  return out;
}

std::vector<std::vector<float>> decode_forced_logits(engine::Engine& e, const std::vector<std::vector<int64_t>>& seqs,
                                                     const std::vector<int64_t>& last_n) {
  // The prompts go in one prefill; each sequence is one row of every decode step after it.
  std::vector<int64_t> prompt_tokens, rows(seqs.size(), 1);
  for (size_t i = 0; i < seqs.size(); ++i) prompt_tokens.push_back(static_cast<int64_t>(seqs[i].size()) - last_n[i]);
  std::vector<std::vector<float>> out;
  for (const auto& g : step_groups(prompt_tokens, rows, e.config().max_num_batched_tokens, e.config().max_num_seqs))
    for (auto& l : e.decode_logits_packed(slice(seqs, g), slice(last_n, g))) out.push_back(std::move(l));
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
