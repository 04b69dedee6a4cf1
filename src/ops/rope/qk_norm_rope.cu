// qk_norm_rope CUDA baseline (Qwen3 attention prologue, fused).
//
// Memory bound. Qwen3-8B prefill of 16384 tokens (32 q + 8 k heads x 128, bf16): q and k
// read and written once in place = 2 * 16384 * 40 * 128 * 2 B = 335.5 MB, plus 8.4 MB of
// f32 cache rows and the two 256-byte weights: ~344 MB, a floor of ~115 us at 3.0 TB/s.
// The unfused path (rms_norm of q, of k, then rotary_embedding) moves twice that.
//
// Same kernel family as rotary_embedding (rope_kernels.cuh): the group of lanes that owns a
// head holds all of it in registers, reduces the sum of squares with shuffles inside the
// group, scales by rsqrt * weight, rotates and stores once. The tail dims of a partial
// rotary are normalised and stored without rotation.
#include "fk/op_registry.h"
#include "ops/rope/rope_launch.cuh"

namespace fk::ops {
namespace {

fk_status qk_norm_rope_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const QkNormRopeArgs*>(args);
    rope_cuda::LaunchInputs in;
    in.op = QkNormRopeArgs::kName;
    in.shape = validate_qk_norm_rope(a, RopeImpl::cuda);
    in.positions = a.positions;
    in.query = a.query;
    in.key = a.key;
    in.cos_sin_cache = a.cos_sin_cache;
    in.q_weight = &a.q_weight;
    in.k_weight = &a.k_weight;
    in.style = a.style;
    in.eps = a.eps;
    rope_cuda::launch_rope<true>(in, static_cast<cudaStream_t>(stream));
  });
}

FK_REGISTER_IMPL("qk_norm_rope", cuda, qk_norm_rope_cuda);

}  // namespace
}  // namespace fk::ops
