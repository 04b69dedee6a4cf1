// ModelRunner's logprobs: the logit rows of the requests that asked for logprobs go through
// the compute_logprobs op (fk/ops/logprobs.h), one call per run of adjacent rows, after the
// sampler (whose ids it reads). A step in which no request asked does no work here.
#include <algorithm>

#include "serving/generate/model_runner.h"
#include "runtime/views.h"
#include "fk/op_registry.h"
#include "fk/ops/logprobs.h"
#include "fk/runtime.h"
#include "fk/status.h"

namespace fk::engine {

namespace {

constexpr int64_t kMaxK = ops::kMaxTopLogprobs;

// A contiguous [rows, cols] matrix at element `offset` of a flat buffer.
TensorView matrix_at(const Tensor& flat, int64_t offset, int64_t rows, int64_t cols) {
  FK_CHECK(offset + rows * cols <= flat.numel(), "matrix_at: [", rows, ", ", cols, "] at ", offset,
           " exceeds a buffer of ", flat.numel());
  TensorView v = flat;
  v.data = v.element_ptr(offset);
  v.rank = 2;
  v.shape[0] = rows;
  v.shape[1] = cols;
  v.strides[0] = cols;
  v.strides[1] = 1;
  return v;
}

}  // namespace

std::vector<std::optional<TokenLogprobs>> ModelRunner::compute_logprobs(std::span<const StepRequest> step,
                                                                        const TensorView& logits,
                                                                        const std::vector<int64_t>& row_of) {
  struct Wanted {
    int64_t row;  // of the logits
    size_t out;   // index among the step's sampled tokens
    int64_t k;    // alternatives wanted
  };
  std::vector<Wanted> wanted;
  size_t out = 0;
  const int64_t V = logits.shape[1];
  for (size_t i = 0; i < step.size(); ++i) {
    if (!step[i].needs_logits) continue;
    const int64_t row = row_of[i];
    const std::optional<int32_t>& k = step[i].request->params.logprobs;
    if (k) wanted.push_back({row, out, std::min<int64_t>(*k, V)});
    ++out;
  }
  std::vector<std::optional<TokenLogprobs>> result(out);
  if (wanted.empty()) return result;

  const int64_t R = logits.shape[0];
  if (!logprob_.defined() || logprob_.numel() < R) {
    const int64_t rows = std::max(R, config_.max_seqs);
    const Device dev = model_.device();
    logprob_ = Tensor::zeros({rows}, DType::f32, dev, stream_);
    topk_ids_ = Tensor::zeros({rows * kMaxK}, DType::i32, dev, stream_);
    topk_logprobs_ = Tensor::zeros({rows * kMaxK}, DType::f32, dev, stream_);
  }
  // Runs of adjacent rows, each with the largest K any of its rows wants. Run [r0, r0 + n)
  // writes its [n, K] alternatives at element r0 * kMaxK, inside its rows' share.
  struct Run {
    size_t first, end;  // into `wanted`
    int64_t k;
  };
  std::vector<Run> runs;
  for (size_t w = 0; w < wanted.size(); ++w) {
    if (runs.empty() || wanted[w].row != wanted[w - 1].row + 1) runs.push_back({w, w, 0});
    runs.back().end = w + 1;
    runs.back().k = std::max(runs.back().k, wanted[w].k);
  }
  for (const Run& run : runs) {
    const int64_t r0 = wanted[run.first].row, n = static_cast<int64_t>(run.end - run.first);
    call_op(ops::ComputeLogprobsArgs{row_range(logprob_, r0, n), matrix_at(topk_ids_, r0 * kMaxK, n, run.k),
                                     matrix_at(topk_logprobs_, r0 * kMaxK, n, run.k), row_range(logits, r0, n),
                                     row_range(sampled_, r0, n)},
            backend_, stream_);
  }
  std::vector<float> lp(static_cast<size_t>(R)), top_lp(static_cast<size_t>(R * kMaxK));
  std::vector<int32_t> top_ids(static_cast<size_t>(R * kMaxK));
  rt::memcpy_async(lp.data(), Device::cpu(), logprob_.data(), logprob_.device(), lp.size() * sizeof(float), stream_);
  rt::memcpy_async(top_ids.data(), Device::cpu(), topk_ids_.data(), topk_ids_.device(), top_ids.size() * sizeof(int32_t),
                   stream_);
  rt::memcpy_async(top_lp.data(), Device::cpu(), topk_logprobs_.data(), topk_logprobs_.device(),
                   top_lp.size() * sizeof(float), stream_);
  wait();
  for (const Run& run : runs) {
    const int64_t r0 = wanted[run.first].row;
    for (size_t w = run.first; w < run.end; ++w) {
      TokenLogprobs t;
      t.logprob = lp[static_cast<size_t>(wanted[w].row)];
      const int64_t base = r0 * kMaxK + (wanted[w].row - r0) * run.k;
      for (int64_t j = 0; j < wanted[w].k; ++j) {
        t.top_ids.push_back(top_ids[static_cast<size_t>(base + j)]);
        t.top_logprobs.push_back(top_lp[static_cast<size_t>(base + j)]);
      }
      result[wanted[w].out] = std::move(t);
    }
  }
  return result;
}

}  // namespace fk::engine
