// FlashInfer Hopper paged prefill kernels for head dim 64 (one file per head dim: they
// compile in parallel).
#include "ops/attention/cuda/prefill_sm90_launch.cuh"

namespace fk::ops::attn {

cudaError_t prefill_sm90_hd64(const Sm90PrefillLaunch& l, cudaStream_t stream) { return sm90::prefill<64>(l, stream); }

}  // namespace fk::ops::attn
