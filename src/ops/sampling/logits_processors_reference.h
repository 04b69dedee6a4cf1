// The semantics of the logits processors (fk/ops/sampling.h) for one row, in double: the
// CPU references of apply_logit_bias, apply_bad_words and apply_penalties (also their CPU
// implementations, and the oracle), and the host-side reads of their packed lists, which
// check every id and offset.
#pragma once
#include <cstdint>
#include <vector>

#include "fk/tensor_view.h"

namespace fk::ops {

// Row b's entries of a packed list: values[indptr[b] .. indptr[b+1]) for b < B. Throws
// fk::Error naming `op`, the argument and the bad offset (indptr[0] != 0, decreasing, or
// indptr[B] != the list's length) or, when id_limit > 0, the first value outside
// [0, id_limit). Host views.
std::vector<std::vector<int64_t>> read_packed_rows(const char* op, const char* values_name,
                                                   const TensorView& values, const char* indptr_name,
                                                   const TensorView& indptr, int64_t B, int64_t id_limit);

// A row's prompt and output (the token lists of apply_bad_words / apply_penalties).
struct RowTokens {
  std::vector<int64_t> prompt, output;
};
std::vector<RowTokens> read_row_tokens(const char* op, const TensorView& tokens, const TensorView& token_indptr,
                                       const TensorView& prompt_len, int64_t B, int64_t V);

// x[ids[i]] += bias[i] for every entry.
void bias_row(std::vector<double>& x, const std::vector<int64_t>& ids, const std::vector<double>& bias);
// x[w.back()] = -inf for each word w whose first w.size() - 1 tokens end `output`.
void ban_bad_words_row(std::vector<double>& x, const std::vector<int64_t>& output,
                       const std::vector<std::vector<int64_t>>& words);
// The repetition, frequency and presence penalties of one row.
void penalize_row(std::vector<double>& x, const RowTokens& tokens, double repetition, double frequency,
                  double presence);

// Row b of a [B, V] host view as doubles, and back.
std::vector<double> read_row(const TensorView& m, int64_t b);
void write_row(const TensorView& m, int64_t b, const std::vector<double>& x);

}  // namespace fk::ops
