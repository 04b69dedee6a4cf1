// fk's split-KV paged decode kernels for head dim 64.
#include "ops/attention/cuda/split_kv_decode.cuh"

namespace fk::ops::attn {

cudaError_t split_kv_decode_hd64(const SplitKvDecodeLaunch& l, cudaStream_t stream) {
  return split_kv::run_any<64>(l, stream);
}

}  // namespace fk::ops::attn
