#include "ops/sampling/logits_processors_reference.h"

#include <limits>

#include "fk/element.h"
#include "fk/status.h"

namespace fk::ops {

std::vector<std::vector<int64_t>> read_packed_rows(const char* op, const char* values_name,
                                                   const TensorView& values, const char* indptr_name,
                                                   const TensorView& indptr, int64_t B, int64_t id_limit) {
  const int64_t N = values.numel();
  FK_CHECK(get_index(indptr, 0) == 0, op, ": ", indptr_name, "[0] must be 0, got ", get_index(indptr, 0));
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const int64_t begin = get_index(indptr, b), end = get_index(indptr, b + 1);
    FK_CHECK(begin <= end && end <= N, op, ": ", indptr_name, "[", b + 1, "] = ", end, " must lie in [", begin, ", ",
             N, "] (", indptr_name, "[", b, "] and the length of ", values_name, ")");
    for (int64_t i = begin; i < end; ++i) {
      const int64_t v = get_index(values, i);
      FK_CHECK(id_limit <= 0 || (v >= 0 && v < id_limit), op, ": ", values_name, "[", i, "] = ", v,
               " is outside the vocabulary [0, ", id_limit, ")");
      rows[static_cast<size_t>(b)].push_back(v);
    }
  }
  FK_CHECK(B == 0 || get_index(indptr, B) == N, op, ": ", indptr_name, "[", B, "] = ", get_index(indptr, B),
           " must be the length of ", values_name, " (", N, ")");
  FK_CHECK(B > 0 || N == 0, op, ": ", values_name, " has ", N, " entries but there are no rows");
  return rows;
}

std::vector<RowTokens> read_row_tokens(const char* op, const TensorView& tokens, const TensorView& token_indptr,
                                       const TensorView& prompt_len, int64_t B, int64_t V) {
  const auto rows = read_packed_rows(op, "tokens", tokens, "token_indptr", token_indptr, B, V);
  std::vector<RowTokens> out(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    const auto& row = rows[static_cast<size_t>(b)];
    const int64_t p = get_index(prompt_len, b);
    FK_CHECK(p >= 0 && p <= static_cast<int64_t>(row.size()), op, ": prompt_len[", b, "] = ", p,
             " must lie in [0, ", row.size(), "] (row ", b, "'s token count)");
    out[static_cast<size_t>(b)].prompt.assign(row.begin(), row.begin() + p);
    out[static_cast<size_t>(b)].output.assign(row.begin() + p, row.end());
  }
  return out;
}

void bias_row(std::vector<double>& x, const std::vector<int64_t>& ids, const std::vector<double>& bias) {
  for (size_t i = 0; i < ids.size(); ++i) x[static_cast<size_t>(ids[i])] += bias[i];
}

void ban_bad_words_row(std::vector<double>& x, const std::vector<int64_t>& output,
                       const std::vector<std::vector<int64_t>>& words) {
  for (const auto& w : words) {
    const size_t prefix = w.size() - 1;
    if (prefix > output.size()) continue;
    bool match = true;
    for (size_t k = 0; k < prefix && match; ++k) match = output[output.size() - prefix + k] == w[k];
    if (match) x[static_cast<size_t>(w.back())] = -std::numeric_limits<double>::infinity();
  }
}

void penalize_row(std::vector<double>& x, const RowTokens& tokens, double repetition, double frequency,
                  double presence) {
  std::vector<int64_t> count(x.size(), 0);
  std::vector<bool> seen(x.size(), false);
  for (int64_t t : tokens.prompt) seen[static_cast<size_t>(t)] = true;
  for (int64_t t : tokens.output) {
    seen[static_cast<size_t>(t)] = true;
    ++count[static_cast<size_t>(t)];
  }
  for (size_t v = 0; v < x.size(); ++v) {
    if (seen[v]) x[v] = x[v] > 0 ? x[v] / repetition : x[v] * repetition;
    x[v] -= frequency * static_cast<double>(count[v]) + (count[v] > 0 ? presence : 0.0);
  }
}

std::vector<double> read_row(const TensorView& m, int64_t b) {
  std::vector<double> x(static_cast<size_t>(m.shape[1]));
  for (int64_t v = 0; v < m.shape[1]; ++v) x[static_cast<size_t>(v)] = get(m, b, v);
  return x;
}

void write_row(const TensorView& m, int64_t b, const std::vector<double>& x) {
  for (int64_t v = 0; v < m.shape[1]; ++v) set(m, x[static_cast<size_t>(v)], b, v);
}

}  // namespace fk::ops
