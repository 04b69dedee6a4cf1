// FlashInfer Hopper ragged prefill kernels for head dim 128 over contiguous KV (the
// contiguous-KV path, attention_kernels.h); a file of their own, to compile in parallel
// with the paged ones.
#include "ops/attention/cuda/prefill_sm90_launch.cuh"

namespace fk::ops::attn {

cudaError_t prefill_sm90_contiguous_hd128(const Sm90PrefillLaunch& l, const Sm90ContiguousKv& kv,
                                          cudaStream_t stream) {
  return sm90::prefill_contiguous<128>(l, kv, stream);
}

}  // namespace fk::ops::attn
