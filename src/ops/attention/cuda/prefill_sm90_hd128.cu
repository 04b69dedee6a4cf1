// FlashInfer Hopper paged prefill kernels for head dim 128 (one file per head dim: they
// compile in parallel).
#include "ops/attention/cuda/prefill_sm90_launch.cuh"

namespace fk::ops::attn {

cudaError_t prefill_sm90_hd128(const Sm90PrefillLaunch& l, cudaStream_t stream) { return sm90::prefill<128>(l, stream); }

}  // namespace fk::ops::attn
