// CUDA baselines of the logits processors (fk/ops/sampling.h): apply_logit_bias,
// apply_bad_words and apply_penalties.
//
// They run for steps where some request asked for them, before `sample`, on a decode
// batch's [B, V] f32 logits (256 x 152k: 156 MB, ~50 us per full pass at 3 TB/s). Only
// apply_logit_bias (the f32 copy of the logits) and apply_penalties (one read-modify-write)
// pass over whole rows; the per-token work is one block per row striding over the row's
// list entries. Ids outside [0, V) are skipped: the values are not read back to the host.
//
// apply_penalties counts in its workspace: counts[b, v] = occurrences of v in row b's output,
// with kPromptBit set when v is in the prompt (outputs are far fewer than 2^30 tokens).
// Repeated ids and tokens are added with atomics: sums of integers are exact; repeated
// logit biases are float sums in any order (the definition's tolerance).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/sampling/logits_processors_validate.h"

namespace fk::ops {
namespace {

constexpr int kThreads = 256;
constexpr int kPromptBit = 1 << 30;

// Blocks (row, chunk) over a [rows, cols] pass: at most 65535 chunks, grid-strided.
dim3 row_grid(int64_t rows, int64_t cols) {
  return dim3(static_cast<unsigned>(rows),
              static_cast<unsigned>(std::min<int64_t>(cuda::ceil_div(cols, kThreads), 65535)));
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    copy_logits_kernel(float* out, int64_t out_stride, const T* logits, int64_t stride, int64_t V) {
  const int64_t b = blockIdx.x;
  for (int64_t v = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; v < V;
       v += static_cast<int64_t>(gridDim.y) * blockDim.x)
    out[b * out_stride + v] = cuda::to_float(logits[b * stride + v]);
}

__global__ void __launch_bounds__(kThreads) add_bias_kernel(float* out, int64_t out_stride, int64_t V,
                                                            const int32_t* ids, const float* bias,
                                                            const int32_t* indptr) {
  const int64_t b = blockIdx.x;
  for (int i = indptr[b] + static_cast<int>(threadIdx.x); i < indptr[b + 1]; i += blockDim.x) {
    const int32_t id = ids[i];
    if (id >= 0 && id < V) atomicAdd(&out[b * out_stride + id], bias[i]);
  }
}

fk_status apply_logit_bias_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const ApplyLogitBiasArgs*>(args);
    validate_apply_logit_bias(a, DeviceType::cuda);
    const int64_t B = a.out.shape[0], V = a.out.shape[1];
    if (B == 0) return;
    const auto s = static_cast<cudaStream_t>(stream);
    cuda::dispatch_float_dtype(a.logits.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      copy_logits_kernel<T><<<row_grid(B, V), kThreads, 0, s>>>(a.out.ptr<float>(), a.out.strides[0],
                                                                a.logits.ptr<T>(), a.logits.strides[0], V);
      FK_CUDA_CHECK_LAUNCH();
    });
    if (a.ids.numel() == 0) return;
    add_bias_kernel<<<static_cast<unsigned>(B), kThreads, 0, s>>>(a.out.ptr<float>(), a.out.strides[0], V,
                                                                  a.ids.ptr<int32_t>(), a.bias.ptr<float>(),
                                                                  a.indptr.ptr<int32_t>());
    FK_CUDA_CHECK_LAUNCH();
  });
}

// One block per row, one thread per word of the row: compares the word's prefix with the
// tail of the row's output (tokens after its prompt).
__global__ void __launch_bounds__(kThreads)
    bad_words_kernel(float* logits, int64_t stride, int64_t V, const int32_t* tokens, const int32_t* token_indptr,
                     const int32_t* prompt_len, const int32_t* word_tokens, const int32_t* word_indptr,
                     const int32_t* row_words) {
  const int64_t b = blockIdx.x;
  const int out_begin = token_indptr[b] + prompt_len[b], out_end = token_indptr[b + 1];
  for (int j = row_words[b] + static_cast<int>(threadIdx.x); j < row_words[b + 1]; j += blockDim.x) {
    const int w0 = word_indptr[j], w1 = word_indptr[j + 1];
    if (w1 <= w0) continue;
    const int prefix = w1 - w0 - 1;
    if (prefix > out_end - out_begin) continue;
    bool match = true;
    for (int k = 0; k < prefix && match; ++k) match = tokens[out_end - prefix + k] == word_tokens[w0 + k];
    const int32_t last = word_tokens[w1 - 1];
    if (match && last >= 0 && last < V) logits[b * stride + last] = -INFINITY;
  }
}

fk_status apply_bad_words_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const ApplyBadWordsArgs*>(args);
    validate_apply_bad_words(a, DeviceType::cuda);
    const int64_t B = a.logits.shape[0], V = a.logits.shape[1];
    if (B == 0 || a.word_tokens.numel() == 0) return;
    bad_words_kernel<<<static_cast<unsigned>(B), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        a.logits.ptr<float>(), a.logits.strides[0], V, a.tokens.ptr<int32_t>(), a.token_indptr.ptr<int32_t>(),
        a.prompt_len.ptr<int32_t>(), a.word_tokens.ptr<int32_t>(), a.word_indptr.ptr<int32_t>(),
        a.row_words.ptr<int32_t>());
    FK_CUDA_CHECK_LAUNCH();
  });
}

__global__ void __launch_bounds__(kThreads) count_tokens_kernel(int32_t* counts, int64_t V, const int32_t* tokens,
                                                                const int32_t* token_indptr,
                                                                const int32_t* prompt_len) {
  const int64_t b = blockIdx.x;
  const int begin = token_indptr[b], out_begin = begin + prompt_len[b];
  for (int i = begin + static_cast<int>(threadIdx.x); i < token_indptr[b + 1]; i += blockDim.x) {
    const int32_t t = tokens[i];
    if (t < 0 || t >= V) continue;
    if (i < out_begin)
      atomicOr(&counts[b * V + t], kPromptBit);
    else
      atomicAdd(&counts[b * V + t], 1);
  }
}

// The penalties in vLLM's float order: repetition scaling, then frequency, then presence.
__global__ void __launch_bounds__(kThreads)
    penalize_kernel(float* logits, int64_t stride, int64_t V, const int32_t* counts, const float* repetition,
                    const float* frequency, const float* presence) {
  const int64_t b = blockIdx.x;
  const float rep = repetition[b], freq = frequency[b], pres = presence[b];
  for (int64_t v = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x; v < V;
       v += static_cast<int64_t>(gridDim.y) * blockDim.x) {
    const int32_t c = counts[b * V + v];
    if (c == 0) continue;  // neither in the prompt nor in the output: unchanged
    const int32_t n = c & (kPromptBit - 1);
    float x = logits[b * stride + v];
    x = x > 0.f ? x / rep : x * rep;
    x -= freq * static_cast<float>(n);
    x -= n > 0 ? pres : 0.f;
    logits[b * stride + v] = x;
  }
}

fk_status apply_penalties_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const ApplyPenaltiesArgs*>(args);
    validate_apply_penalties(a, DeviceType::cuda);
    const int64_t B = a.logits.shape[0], V = a.logits.shape[1];
    if (B == 0) return;
    const auto s = static_cast<cudaStream_t>(stream);
    FK_CUDA_CHECK(cudaMemsetAsync(a.counts.data, 0, static_cast<size_t>(B * V) * sizeof(int32_t), s));
    if (a.tokens.numel() > 0) {
      count_tokens_kernel<<<static_cast<unsigned>(B), kThreads, 0, s>>>(
          a.counts.ptr<int32_t>(), V, a.tokens.ptr<int32_t>(), a.token_indptr.ptr<int32_t>(),
          a.prompt_len.ptr<int32_t>());
      FK_CUDA_CHECK_LAUNCH();
    }
    penalize_kernel<<<row_grid(B, V), kThreads, 0, s>>>(a.logits.ptr<float>(), a.logits.strides[0], V,
                                                        a.counts.ptr<int32_t>(), a.repetition_penalty.ptr<float>(),
                                                        a.frequency_penalty.ptr<float>(),
                                                        a.presence_penalty.ptr<float>());
    FK_CUDA_CHECK_LAUNCH();
  });
}

FK_REGISTER_IMPL("apply_logit_bias", cuda, apply_logit_bias_cuda);
FK_REGISTER_IMPL("apply_bad_words", cuda, apply_bad_words_cuda);
FK_REGISTER_IMPL("apply_penalties", cuda, apply_penalties_cuda);

}  // namespace
}  // namespace fk::ops
