#include <cuda_runtime.h>

#include <cstdint>

#include "serving/generate/pending_tokens.h"
#include "fk/cuda/check.h"

namespace fk::engine {
namespace {

__global__ void fill_pending_tokens_kernel(int32_t* input_ids, const int64_t* sampled, const int32_t* dst,
                                           const int32_t* src, int n) {
  const int j = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (j < n && dst[j] >= 0) input_ids[dst[j]] = static_cast<int32_t>(sampled[src[j]]);
}

}  // namespace

void fill_pending_tokens_cuda(const TensorView& input_ids, const TensorView& sampled, const TensorView& dst,
                              const TensorView& src, void* stream) {
  // The runner builds dst and src from its own bookkeeping (in range by construction); a
  // step has at most max_num_seqs entries.
  const int n = static_cast<int>(dst.shape[0]);
  constexpr int kThreads = 256;
  fill_pending_tokens_kernel<<<(n + kThreads - 1) / kThreads, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<int32_t*>(input_ids.data), static_cast<const int64_t*>(sampled.data),
      static_cast<const int32_t*>(dst.data), static_cast<const int32_t*>(src.data), n);
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace fk::engine
