// rms_norm CUDA baseline.
//
// Memory bound: one read of input, one write of out (weight stays in L2). One block per
// row; each thread keeps its 16-byte chunks of the row in registers between the
// reduction and the scaling pass, so the row is read from memory once.
//   fast path: H % (16/sizeof(T)) == 0 and 16-byte aligned rows -> vector loads
//   general path: scalar loads, two passes over the row (any H, any alignment)
#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/norm/norm_validate.h"

namespace fk::ops {
namespace {

using cuda::block_sum;
using cuda::from_float;
using cuda::to_float;
using cuda::Vec16;

template <class T, int kChunks>
__global__ void __launch_bounds__(1024) rms_norm_vec_kernel(T* __restrict__ out, int64_t out_stride,
                                                            const T* __restrict__ in, int64_t in_stride,
                                                            const T* __restrict__ w, int H, float eps) {
  __shared__ float scratch[32];
  constexpr int N = Vec16<T>::N;
  const int64_t row = blockIdx.x;
  const T* x = in + row * in_stride;
  const int num_vec = H / N;
  Vec16<T> v[kChunks];
  float sum_sq = 0.f;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int i = threadIdx.x + c * blockDim.x;
    if (i < num_vec) {
      v[c] = cuda::load16(x + i * N);
#pragma unroll
      for (int k = 0; k < N; ++k) {
        const float f = to_float(v[c].v[k]);
        sum_sq += f * f;
      }
    }
  }
  const float inv_rms = rsqrtf(block_sum(sum_sq, scratch) / static_cast<float>(H) + eps);
  T* y = out + row * out_stride;
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
    const int i = threadIdx.x + c * blockDim.x;
    if (i < num_vec) {
      const Vec16<T> wv = cuda::load16(w + i * N);
      Vec16<T> r;
#pragma unroll
      for (int k = 0; k < N; ++k) r.v[k] = from_float<T>(to_float(v[c].v[k]) * inv_rms * to_float(wv.v[k]));
      cuda::store16(y + i * N, r);
    }
  }
}

template <class T>
__global__ void rms_norm_scalar_kernel(T* __restrict__ out, int64_t out_stride, const T* __restrict__ in,
                                       int64_t in_stride, const T* __restrict__ w, int H, float eps) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const T* x = in + row * in_stride;
  float sum_sq = 0.f;
  for (int i = threadIdx.x; i < H; i += blockDim.x) {
    const float f = to_float(x[i]);
    sum_sq += f * f;
  }
  const float inv_rms = rsqrtf(block_sum(sum_sq, scratch) / static_cast<float>(H) + eps);
  T* y = out + row * out_stride;
  for (int i = threadIdx.x; i < H; i += blockDim.x) y[i] = from_float<T>(to_float(x[i]) * inv_rms * to_float(w[i]));
}

template <class T>
void launch(const RmsNormArgs& a, cudaStream_t stream) {
  const int64_t T_ = a.input.shape[0];
  const int H = static_cast<int>(a.input.shape[1]);
  if (T_ == 0) return;
  constexpr int N = Vec16<T>::N;
  T* out = a.out.ptr<T>();
  const T* in = a.input.ptr<T>();
  const T* w = a.weight.ptr<T>();
  const bool vec_ok = H % N == 0 && a.input.strides[0] % N == 0 && a.out.strides[0] % N == 0 &&
                      cuda::aligned16(in) && cuda::aligned16(out) && cuda::aligned16(w);
  const int num_vec = H / N;
  if (vec_ok && num_vec <= 4 * 1024) {
    // Enough threads that each holds at most kChunks vectors; at least one warp.
    auto go = [&](auto chunks_tag) {
      constexpr int kChunks = decltype(chunks_tag)::value;
      int threads = (num_vec + kChunks - 1) / kChunks;
      threads = std::max(32, (threads + 31) / 32 * 32);
      rms_norm_vec_kernel<T, kChunks><<<static_cast<unsigned>(T_), threads, 0, stream>>>(
          out, a.out.strides[0], in, a.input.strides[0], w, H, a.eps);
    };
    if (num_vec <= 1024) go(std::integral_constant<int, 1>{});
    else if (num_vec <= 2048) go(std::integral_constant<int, 2>{});
    else go(std::integral_constant<int, 4>{});
  } else {
    rms_norm_scalar_kernel<T><<<static_cast<unsigned>(T_), 256, 0, stream>>>(out, a.out.strides[0], in,
                                                                             a.input.strides[0], w, H, a.eps);
  }
  FK_CUDA_CHECK_LAUNCH();
}

fk_status rms_norm_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const RmsNormArgs*>(args);
    validate_rms_norm(a);
    expect_dtype(RmsNormArgs::kName, "out", a.out, a.input.dtype);
    auto s = static_cast<cudaStream_t>(stream);
    switch (a.input.dtype) {
      case DType::bf16: return launch<__nv_bfloat16>(a, s);
      case DType::f16: return launch<__half>(a, s);
      case DType::f32: return launch<float>(a, s);
      default: FK_FAIL(FK_ERR_UNSUPPORTED, "rms_norm: dtype ", dtype_name(a.input.dtype));
    }
  });
}

FK_REGISTER_IMPL("rms_norm", cuda, rms_norm_cuda);

}  // namespace
}  // namespace fk::ops
