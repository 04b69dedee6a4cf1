// expect: PASSED
// Honest but slow: one thread per row.
#include "common.cuh"

namespace {
template <class T>
__global__ void thread_per_row(T* out, int64_t os, const T* in, int64_t is, const T* w, int T_, int H, float eps) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= T_) return;
  float ss = 0.f;
  for (int h = 0; h < H; ++h) {
    const float x = adv::ld(in + r * is, h);
    ss += x * x;
  }
  const float inv = rsqrtf(ss / H + eps);
  for (int h = 0; h < H; ++h) adv::st(out + r * os, h, adv::ld(in + r * is, h) * inv * adv::ld(w, h));
}

fk_status run(const void* raw, void* stream) {
  const auto& a = adv::args(raw);
  const int T = static_cast<int>(a.input.shape[0]), H = static_cast<int>(a.input.shape[1]);
  if (T == 0) return FK_OK;
  auto s = static_cast<cudaStream_t>(stream);
  switch (a.input.dtype) {
    case fk::DType::bf16:
      thread_per_row<<<(T + 127) / 128, 128, 0, s>>>(static_cast<__nv_bfloat16*>(a.out.data), a.out.strides[0],
                                                     static_cast<const __nv_bfloat16*>(a.input.data), a.input.strides[0],
                                                     static_cast<const __nv_bfloat16*>(a.weight.data), T, H, a.eps);
      break;
    case fk::DType::f16:
      thread_per_row<<<(T + 127) / 128, 128, 0, s>>>(static_cast<__half*>(a.out.data), a.out.strides[0],
                                                     static_cast<const __half*>(a.input.data), a.input.strides[0],
                                                     static_cast<const __half*>(a.weight.data), T, H, a.eps);
      break;
    default: return FK_ERR_UNSUPPORTED;
  }
  return cudaGetLastError() == cudaSuccess ? FK_OK : FK_ERR_CUDA;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
