// Argument checks of compute_logprobs, shared by its CPU reference and CUDA baseline.
#pragma once
#include "fk/ops/logprobs.h"
#include "ops/common/validate.h"

namespace fk::ops {

// `backend`: the CPU implementation is also the oracle, which gets f64 outputs.
inline void validate_compute_logprobs(const ComputeLogprobsArgs& a, DeviceType backend) {
  constexpr const char* op = ComputeLogprobsArgs::kName;
  expect_rank(op, "logits", a.logits, 2);
  expect_dtype_in(op, "logits", a.logits, {DType::f32, DType::bf16});
  expect_rows_contiguous(op, "logits", a.logits);
  const int64_t N = a.logits.shape[0], V = a.logits.shape[1];
  FK_CHECK(V > 0, op, ": the vocabulary (logits dim 1) must not be empty, got ", describe(a.logits));
  FK_CHECK(N <= 1 || a.logits.strides[0] >= V, op, ": logits rows overlap, got row stride ", a.logits.strides[0],
           " for ", describe(a.logits));

  expect_rank(op, "sampled_ids", a.sampled_ids, 1);
  expect_dim(op, "sampled_ids", a.sampled_ids, 0, N);
  expect_dtype(op, "sampled_ids", a.sampled_ids, DType::i64);
  expect_contiguous(op, "sampled_ids", a.sampled_ids);

  expect_rank(op, "sampled_logprob", a.sampled_logprob, 1);
  expect_dim(op, "sampled_logprob", a.sampled_logprob, 0, N);
  expect_written_dtype(op, "sampled_logprob", a.sampled_logprob, DType::f32, backend);
  expect_contiguous(op, "sampled_logprob", a.sampled_logprob);

  expect_rank(op, "topk_ids", a.topk_ids, 2);
  expect_dim(op, "topk_ids", a.topk_ids, 0, N);
  const int64_t K = a.topk_ids.shape[1];
  FK_CHECK(K >= 0 && K <= kMaxTopLogprobs && K <= V, op, ": topk_ids dim 1 (K) must be in [0, min(",
           kMaxTopLogprobs, ", V = ", V, ")], got ", describe(a.topk_ids));
  expect_written_dtype(op, "topk_ids", a.topk_ids, DType::i32, backend);
  expect_contiguous(op, "topk_ids", a.topk_ids);
  expect_same_shape(op, "topk_logprobs", a.topk_logprobs, "topk_ids", a.topk_ids);
  expect_written_dtype(op, "topk_logprobs", a.topk_logprobs, DType::f32, backend);
  expect_contiguous(op, "topk_logprobs", a.topk_logprobs);

  expect_no_overlap(op, "sampled_logprob", a.sampled_logprob, "logits", a.logits);
  expect_no_overlap(op, "topk_ids", a.topk_ids, "logits", a.logits);
  expect_no_overlap(op, "topk_logprobs", a.topk_logprobs, "logits", a.logits);
  expect_no_overlap(op, "topk_ids", a.topk_ids, "topk_logprobs", a.topk_logprobs);

  expect_device(op, "sampled_logprob", a.sampled_logprob, backend);
  expect_device(op, "topk_ids", a.topk_ids, backend);
  expect_device(op, "topk_logprobs", a.topk_logprobs, backend);
  expect_device(op, "logits", a.logits, backend);
  expect_device(op, "sampled_ids", a.sampled_ids, backend);
}

}  // namespace fk::ops
