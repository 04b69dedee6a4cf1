// rotary_embedding CUDA baseline.
//
// Memory bound. Llama-3.1-8B / Qwen3-8B prefill of 16384 tokens (32 q + 8 k heads x 128,
// bf16): q and k read and written once in place = 2 * 16384 * 40 * 128 * 2 B = 335.5 MB,
// plus 16384 distinct cache rows of 128 f32 = 8.4 MB and 128 KB of positions: ~344 MB,
// a floor of ~115 us at 3.0 TB/s (112 us for q and k alone). Decode (1..256 tokens) is
// launch and latency bound: 40 heads x 256 B per token.
//
// Design (rope_kernels.cuh): 16-byte vector loads and stores of q and k; each lane owns a
// few 16-byte slots of a head and loads their cos/sin (f32, mostly L2 hits) once per
// token, then walks the token's q and k heads in one block; in place, no workspace.
// neox keeps both halves of a pair in one thread, gptj pairs sit inside one vector;
// partial rotary leaves the tail alone. Odd shapes or misaligned views take the scalar
// kernel (one warp per head).
#include "fk/op_registry.h"
#include "ops/rope/rope_launch.cuh"

namespace fk::ops {
namespace {

fk_status rotary_embedding_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const RotaryEmbeddingArgs*>(args);
    rope_cuda::LaunchInputs in;
    in.op = RotaryEmbeddingArgs::kName;
    in.shape = validate_rotary_embedding(a, RopeImpl::cuda);
    in.positions = a.positions;
    in.query = a.query;
    in.key = a.key;
    in.cos_sin_cache = a.cos_sin_cache;
    in.style = a.style;
    rope_cuda::launch_rope<false>(in, static_cast<cudaStream_t>(stream));
  });
}

FK_REGISTER_IMPL("rotary_embedding", cuda, rotary_embedding_cuda);

}  // namespace
}  // namespace fk::ops
