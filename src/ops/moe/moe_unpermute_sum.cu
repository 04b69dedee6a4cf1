// moe_unpermute_sum CUDA baseline: one thread per 16 bytes of an output row (or per
// element when rows are not 16-byte aligned), the k rows it sums read in slot order and
// accumulated in fp32.
#include <cuda_runtime.h>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/moe/moe_unpermute_cuda.h"
#include "ops/moe/moe_validate.h"

namespace fk::ops {
namespace moe_cuda {
namespace {

// kVec elements per thread (16 bytes, or 1).
template <class T, int kVec>
__global__ void __launch_bounds__(128) unpermute_kernel(const UnpermuteParams p) {
  const int t = blockIdx.x;
  const int h = (blockIdx.y * blockDim.x + threadIdx.x) * kVec;
  if (h >= p.H) return;
  float acc[kVec] = {};
  for (int j = 0; j < p.k; ++j) {
    const int row = p.inv_perm[static_cast<int64_t>(t) * p.k + j];
    if (row < 0 || row >= p.P) continue;
    const float w = p.weights ? p.weights[static_cast<int64_t>(t) * p.k + j] : 1.f;
    const T* src = static_cast<const T*>(p.permuted) + static_cast<int64_t>(row) * p.ld_perm + h;
    if constexpr (kVec == 1) {
      acc[0] += w * cuda::to_float(src[0]);
    } else {
      const cuda::Vec16<T> v = cuda::load16(src);
#pragma unroll
      for (int q = 0; q < kVec; ++q) acc[q] += w * cuda::to_float(v.v[q]);
    }
  }
  T* dst = static_cast<T*>(p.out) + static_cast<int64_t>(t) * p.ld_out + h;
  if constexpr (kVec == 1) {
    dst[0] = cuda::from_float<T>(acc[0]);
  } else {
    cuda::Vec16<T> r;
#pragma unroll
    for (int q = 0; q < kVec; ++q) r.v[q] = cuda::from_float<T>(acc[q]);
    cuda::store16(dst, r);
  }
}

template <class T>
void launch_typed(const UnpermuteParams& p, int64_t T_tokens, bool vectorised, cudaStream_t s) {
  constexpr int kVec = 16 / sizeof(T);
  const int per_thread = vectorised ? kVec : 1;
  const int64_t threads_per_row = (p.H + per_thread - 1) / per_thread;
  const dim3 grid(static_cast<unsigned>(T_tokens), static_cast<unsigned>((threads_per_row + 127) / 128));
  if (vectorised) unpermute_kernel<T, kVec><<<grid, 128, 0, s>>>(p);
  else unpermute_kernel<T, 1><<<grid, 128, 0, s>>>(p);
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace

void launch_unpermute(const UnpermuteParams& p, int64_t tokens, DType dtype, bool vectorised, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case DType::f32: launch_typed<float>(p, tokens, vectorised, s); break;
    case DType::f16: launch_typed<__half>(p, tokens, vectorised, s); break;
    default: launch_typed<__nv_bfloat16>(p, tokens, vectorised, s); break;
  }
}

}  // namespace moe_cuda

namespace {

fk_status unpermute_sum_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const MoeUnpermuteSumArgs*>(args);
    validate_unpermute_sum(a, DeviceType::cuda);
    const int64_t T = a.out.shape[0];
    if (T == 0) return;
    moe_cuda::UnpermuteParams p{};
    p.out = a.out.data;
    p.ld_out = a.out.strides[0];
    p.permuted = a.permuted.data;
    p.ld_perm = a.permuted.strides[0];
    p.inv_perm = static_cast<const int32_t*>(a.inv_perm.data);
    p.weights = arg_present(a.topk_weights) ? static_cast<const float*>(a.topk_weights.data) : nullptr;
    p.k = static_cast<int>(a.inv_perm.shape[1]);
    p.H = static_cast<int>(a.permuted.shape[1]);
    p.P = static_cast<int>(a.permuted.shape[0]);
    const int64_t vec = 16 / a.permuted.element_size();
    const bool vectorised = p.H % vec == 0 && p.ld_out % vec == 0 && p.ld_perm % vec == 0 &&
                            cuda::aligned16(a.out.data) && cuda::aligned16(a.permuted.data);
    moe_cuda::launch_unpermute(p, T, a.permuted.dtype, vectorised, stream);
  });
}

FK_REGISTER_IMPL("moe_unpermute_sum", cuda, unpermute_sum_cuda);

}  // namespace
}  // namespace fk::ops
