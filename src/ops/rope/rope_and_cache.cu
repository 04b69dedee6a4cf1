// rope_and_cache CUDA baseline: the rope kernels of rotary_embedding / qk_norm_rope with the
// KV-cache write folded in (rope_kernels.cuh, kCache). A decode step's few tokens gain a
// kernel boundary a layer; in a prefill the rotated key is stored to the cache from the
// registers that rotated it instead of being read back by a second kernel.
#include "fk/op_registry.h"
#include "ops/rope/rope_launch.cuh"

namespace fk::ops {
namespace {

fk_status rope_and_cache_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const RopeAndCacheArgs*>(args);
    rope_cuda::LaunchInputs in;
    in.op = RopeAndCacheArgs::kName;
    in.shape = validate_rope_and_cache(a, RopeImpl::cuda);
    in.positions = a.positions;
    in.query = a.query;
    in.key = a.key;
    in.cos_sin_cache = a.cos_sin_cache;
    in.style = a.style;
    in.value = &a.value;
    in.k_cache = &a.k_cache;
    in.v_cache = &a.v_cache;
    in.slot_mapping = &a.slot_mapping;
    const auto s = static_cast<cudaStream_t>(stream);
    if (arg_present(a.q_weight)) {
      in.q_weight = &a.q_weight;
      in.k_weight = &a.k_weight;
      in.eps = a.eps;
      rope_cuda::launch_rope</*kNorm=*/true, /*kCache=*/true>(in, s);
    } else {
      rope_cuda::launch_rope</*kNorm=*/false, /*kCache=*/true>(in, s);
    }
  });
}

FK_REGISTER_IMPL("rope_and_cache", cuda, rope_and_cache_cuda);

}  // namespace
}  // namespace fk::ops
