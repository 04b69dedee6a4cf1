// FlashInfer CUDA-core paged decode kernels (plan and run) for head dim 128.
#include "ops/attention/cuda/decode_launch.cuh"

namespace fk::ops::attn {

cudaError_t decode_plan_hd128(const DecodePlanRequest& r, cudaStream_t stream) { return decode::plan_any<128>(r, stream); }
cudaError_t decode_run_hd128(const DecodeLaunch& l, cudaStream_t stream) { return decode::run_any<128>(l, stream); }

}  // namespace fk::ops::attn
