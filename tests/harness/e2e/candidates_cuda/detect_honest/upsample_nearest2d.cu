// expect: PASSED
// Nearest upsampling as the op defines it (out[n, y, x, c] = input[n, y / s_h, x / s_w, c]),
// one element per thread, a copy: YOLOv10's neck with it installed gives the baseline's head
// outputs and detections (on a GPU: fk e2e eval --model yolov10n --dtype f16 --workload 1x640).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fk/ops/conv.h"

namespace {

template <class T>
__global__ void upsample_kernel(fk::ops::UpsampleNearest2dArgs a) {
  const int64_t oh = a.out.shape[1], ow = a.out.shape[2], c = a.out.shape[3];
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= a.out.shape[0] * oh * ow * c) return;
  const int64_t k = i % c, x = (i / c) % ow, y = (i / (c * ow)) % oh, n = i / (c * ow * oh);
  const T* in = static_cast<const T*>(a.input.data);
  T* out = static_cast<T*>(a.out.data);
  out[n * a.out.strides[0] + y * a.out.strides[1] + x * a.out.strides[2] + k] =
      in[n * a.input.strides[0] + (y / a.scale_h) * a.input.strides[1] + (x / a.scale_w) * a.input.strides[2] + k];
}

template <class T>
void launch(const fk::ops::UpsampleNearest2dArgs& a, cudaStream_t s) {
  const int64_t n = a.out.shape[0] * a.out.shape[1] * a.out.shape[2] * a.out.shape[3];
  if (n == 0) return;
  upsample_kernel<T><<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(a);
}

fk_status run(const void* raw, void* stream) {
  const auto& a = *static_cast<const fk::ops::UpsampleNearest2dArgs*>(raw);
  const auto s = static_cast<cudaStream_t>(stream);
  switch (a.input.dtype) {
    case fk::DType::f16: launch<__half>(a, s); break;
    case fk::DType::bf16: launch<__nv_bfloat16>(a, s); break;
    case fk::DType::f32: launch<float>(a, s); break;
    default: return FK_ERR_INVALID_ARGUMENT;
  }
  return cudaGetLastError() == cudaSuccess ? FK_OK : FK_ERR_CUDA;
}

}  // namespace

FK_EXPORT_CANDIDATE(upsample_nearest2d, run)
