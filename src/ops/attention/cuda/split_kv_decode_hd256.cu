// fk's split-KV paged decode kernels for head dim 256.
#include "ops/attention/cuda/split_kv_decode.cuh"

namespace fk::ops::attn {

cudaError_t split_kv_decode_hd256(const SplitKvDecodeLaunch& l, cudaStream_t stream) {
  return split_kv::run_any<256>(l, stream);
}

}  // namespace fk::ops::attn
