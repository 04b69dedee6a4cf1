// Argument checks of the logits processors (apply_logit_bias, apply_bad_words,
// apply_penalties), shared by their CPU references and CUDA baselines. Shapes, dtypes and
// devices only: the values of ids and offsets are checked where they are read on the host
// (logits_processors_reference.h).
#pragma once
#include "fk/ops/sampling.h"
#include "ops/common/validate.h"

namespace fk::ops {

// A [B, V] logits argument the op writes (f32; the oracle's f64 copy on the CPU).
inline void expect_processed_logits(const char* op, const char* arg, const TensorView& v, DeviceType backend) {
  expect_rank(op, arg, v, 2);
  expect_written_dtype(op, arg, v, DType::f32, backend);
  expect_rows_contiguous(op, arg, v);
  expect_device(op, arg, v, backend);
  FK_CHECK(v.shape[1] > 0, op, ": the vocabulary (", arg, " dim 1) must not be empty, got ", describe(v));
  FK_CHECK(v.shape[0] <= 1 || v.strides[0] >= v.shape[1], op, ": ", arg, " rows overlap, got row stride ",
           v.strides[0], " for ", describe(v));
}

// A 1-D contiguous i32/f32 argument of `n` elements (n < 0: any length).
inline void expect_vector(const char* op, const char* arg, const TensorView& v, DType t, int64_t n,
                          DeviceType backend) {
  expect_rank(op, arg, v, 1);
  if (n >= 0) expect_dim(op, arg, v, 0, n);
  expect_dtype(op, arg, v, t);
  expect_contiguous(op, arg, v);
  expect_device(op, arg, v, backend);
}

// A row's token list (prompt then output) as apply_bad_words and apply_penalties take it.
inline void expect_token_lists(const char* op, const TensorView& tokens, const TensorView& token_indptr,
                               const TensorView& prompt_len, int64_t B, DeviceType backend) {
  expect_vector(op, "tokens", tokens, DType::i32, -1, backend);
  expect_vector(op, "token_indptr", token_indptr, DType::i32, B + 1, backend);
  expect_vector(op, "prompt_len", prompt_len, DType::i32, B, backend);
}

inline void validate_apply_logit_bias(const ApplyLogitBiasArgs& a, DeviceType backend) {
  constexpr const char* op = ApplyLogitBiasArgs::kName;
  expect_processed_logits(op, "out", a.out, backend);
  expect_rank(op, "logits", a.logits, 2);
  expect_dtype_in(op, "logits", a.logits, {DType::f32, DType::bf16});
  expect_rows_contiguous(op, "logits", a.logits);
  expect_device(op, "logits", a.logits, backend);
  expect_same_shape(op, "logits", a.logits, "out", a.out);
  const int64_t B = a.out.shape[0];
  expect_vector(op, "ids", a.ids, DType::i32, -1, backend);
  expect_vector(op, "bias", a.bias, DType::f32, a.ids.numel(), backend);
  expect_vector(op, "indptr", a.indptr, DType::i32, B + 1, backend);
  expect_no_overlap(op, "out", a.out, "logits", a.logits);
}

inline void validate_apply_bad_words(const ApplyBadWordsArgs& a, DeviceType backend) {
  constexpr const char* op = ApplyBadWordsArgs::kName;
  expect_processed_logits(op, "logits", a.logits, backend);
  const int64_t B = a.logits.shape[0];
  expect_token_lists(op, a.tokens, a.token_indptr, a.prompt_len, B, backend);
  expect_vector(op, "word_tokens", a.word_tokens, DType::i32, -1, backend);
  expect_vector(op, "word_indptr", a.word_indptr, DType::i32, -1, backend);
  FK_CHECK(a.word_indptr.numel() >= 1, op, ": word_indptr needs at least one entry (0), got ", describe(a.word_indptr));
  expect_vector(op, "row_words", a.row_words, DType::i32, B + 1, backend);
}

inline void validate_apply_penalties(const ApplyPenaltiesArgs& a, DeviceType backend) {
  constexpr const char* op = ApplyPenaltiesArgs::kName;
  expect_processed_logits(op, "logits", a.logits, backend);
  const int64_t B = a.logits.shape[0], V = a.logits.shape[1];
  expect_token_lists(op, a.tokens, a.token_indptr, a.prompt_len, B, backend);
  expect_vector(op, "repetition_penalty", a.repetition_penalty, DType::f32, B, backend);
  expect_vector(op, "frequency_penalty", a.frequency_penalty, DType::f32, B, backend);
  expect_vector(op, "presence_penalty", a.presence_penalty, DType::f32, B, backend);
  expect_rank(op, "counts", a.counts, 2);
  expect_dim(op, "counts", a.counts, 0, B);
  expect_dim(op, "counts", a.counts, 1, V);
  expect_dtype(op, "counts", a.counts, DType::i32);
  expect_contiguous(op, "counts", a.counts);
  expect_device(op, "counts", a.counts, backend);
}

}  // namespace fk::ops
