// expect: PASSED
// A plain CUDA attention sink rescale, one thread per (token, head): inside gpt-oss's
// engine it runs in every layer, reached through gpt_oss_layer's parts, decode steps in the
// engine's CUDA graphs included, and must agree with the baseline token for token.
// oss_sink_flipped/ compiles this file with FLIP_SINK_SIGN: the sink logit enters with the
// wrong sign.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fk/ops/attention_sink.h"

namespace {

#ifdef FLIP_SINK_SIGN
constexpr float kSinkSign = -1.f;
#else
constexpr float kSinkSign = 1.f;
#endif

__device__ float to_float(float x) { return x; }
__device__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ float to_float(__half x) { return __half2float(x); }
template <class T>
__device__ T from_float(float x);
template <>
__device__ float from_float<float>(float x) { return x; }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }
template <>
__device__ __half from_float<__half>(float x) { return __float2half(x); }

// out * S / (S + e^sink) with S = 2^lse; a row that saw no key (lse = -inf) stays zero.
template <class T>
__global__ void rescale(T* out, int64_t row_stride, const float* lse, const float* sinks, int64_t T_, int64_t H,
                        int64_t D) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= T_ * H) return;
  const int64_t t = i / H, h = i % H;
  const float z = lse[i] * 0.69314718055994531f - kSinkSign * sinks[h];
  const float scale = isfinite(z) ? 1.f / (1.f + expf(-z)) : 0.f;
  T* row = out + t * row_stride + h * D;
  for (int64_t d = 0; d < D; ++d) row[d] = from_float<T>(to_float(row[d]) * scale);
}

template <class T>
void launch(const fk::ops::AttentionSinkRescaleArgs& a, cudaStream_t stream) {
  const int64_t T_ = a.out.shape[0], H = a.out.shape[1], D = a.out.shape[2], n = T_ * H;
  if (n == 0) return;
  rescale<T><<<static_cast<unsigned>((n + 255) / 256), 256, 0, stream>>>(
      static_cast<T*>(a.out.data), a.out.strides[0], static_cast<const float*>(a.lse.data),
      static_cast<const float*>(a.sinks.data), T_, H, D);
}

fk_status run(const void* raw, void* stream) {
  const auto& a = *static_cast<const fk::ops::AttentionSinkRescaleArgs*>(raw);
  const auto s = static_cast<cudaStream_t>(stream);
  switch (a.out.dtype) {
    case fk::DType::bf16: launch<__nv_bfloat16>(a, s); break;
    case fk::DType::f16: launch<__half>(a, s); break;
    case fk::DType::f32: launch<float>(a, s); break;
    default: return FK_ERR_INVALID_ARGUMENT;
  }
  return cudaGetLastError() == cudaSuccess ? FK_OK : FK_ERR_CUDA;
}

}  // namespace

FK_EXPORT_CANDIDATE(attention_sink_rescale, run)
