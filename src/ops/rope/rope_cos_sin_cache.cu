// rope_cos_sin_cache CUDA baseline: built once at model load, so precision first. One
// thread per (position, pair), everything in double (inv_freq from the shared formulas of
// fk/rope_cache.h, the angle, cos and sin), rounded once to the cache dtype, so it agrees
// with the CPU reference to the last bit but for rare rounding ties.
#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/rope/rope_validate.h"

namespace fk::ops {
namespace {

template <class C>
__global__ void rope_cos_sin_cache_kernel(C* __restrict__ out, int64_t max_pos, int rot_dim, RopeConfig config,
                                          double attention_factor) {
  const int half = rot_dim / 2;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= max_pos * half) return;
  const int64_t pos = idx / half;
  const int i = static_cast<int>(idx % half);
  const double angle = static_cast<double>(pos) * rope_inv_freq(config, rot_dim, i);
  double s, c;
  sincos(angle, &s, &c);
  out[pos * rot_dim + i] = cuda::from_float<C>(static_cast<float>(c * attention_factor));
  out[pos * rot_dim + half + i] = cuda::from_float<C>(static_cast<float>(s * attention_factor));
}

template <class C>
void launch(const RopeCosSinCacheArgs& a, cudaStream_t stream) {
  const int64_t max_pos = a.cos_sin_cache.shape[0];
  const int rot_dim = static_cast<int>(a.cos_sin_cache.shape[1]);
  const int64_t pairs = max_pos * (rot_dim / 2);
  if (pairs == 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = (pairs + kThreads - 1) / kThreads;
  FK_CHECK(blocks <= INT32_MAX, "rope_cos_sin_cache: cache too large: ", describe(a.cos_sin_cache));
  rope_cos_sin_cache_kernel<C><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      a.cos_sin_cache.ptr<C>(), max_pos, rot_dim, a.config, rope_attention_factor(a.config));
  FK_CUDA_CHECK_LAUNCH();
}

fk_status rope_cos_sin_cache_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const RopeCosSinCacheArgs*>(args);
    validate_rope_cos_sin_cache(a, RopeImpl::cuda);
    auto s = static_cast<cudaStream_t>(stream);
    switch (a.cos_sin_cache.dtype) {
      case DType::f32: return launch<float>(a, s);
      case DType::f16: return launch<__half>(a, s);
      case DType::bf16: return launch<__nv_bfloat16>(a, s);
      default: FK_FAIL(FK_ERR_UNSUPPORTED, "rope_cos_sin_cache: dtype ", dtype_name(a.cos_sin_cache.dtype));
    }
  });
}

FK_REGISTER_IMPL("rope_cos_sin_cache", cuda, rope_cos_sin_cache_cuda);

}  // namespace
}  // namespace fk::ops
