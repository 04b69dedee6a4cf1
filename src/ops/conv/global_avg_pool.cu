// global_avg_pool CUDA baseline: one thread per (image, channel), channels fastest, summing
// the image's pixels in f32 in row-major order; each warp reads 32 consecutive channels of a
// pixel per step (coalesced). At MobileNetV4's 7x7x960 head this is 960 threads per image
// over 49 pixels: launch-bound at batch 1, and at large batches bound by the one pass over
// the input. Splitting the pixel sum across a block (for few channels and large images) is a
// candidate's room.
#include <cuda_runtime.h>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/conv/conv_validate.h"
#include "ops/conv/nhwc.cuh"

namespace fk::ops {
namespace {

using conv_cuda::Nhwc;
constexpr int kThreads = 256;

template <class T>
__global__ void __launch_bounds__(kThreads)
    global_avg_pool_kernel(const Nhwc<const T> in, T* __restrict__ out, int64_t out_stride, float inv) {
  const int C = in.c;
  const int64_t total = static_cast<int64_t>(in.n) * C;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % C);
    const int64_t n = i / C;
    float sum = 0.f;
    for (int h = 0; h < in.h; ++h)
      for (int w = 0; w < in.w; ++w) sum += cuda::to_float(in.pixel(n, h, w)[c]);
    out[n * out_stride + c] = cuda::from_float<T>(sum * inv);
  }
}

fk_status global_avg_pool_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const GlobalAvgPoolArgs*>(args);
    validate_global_avg_pool(a, DeviceType::cuda);
    if (a.out.numel() == 0) return;
    const float inv = 1.f / static_cast<float>(a.input.shape[1] * a.input.shape[2]);
    cuda::dispatch_float_dtype(a.input.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      global_avg_pool_kernel<T>
          <<<conv_cuda::grid_for(a.out.numel(), kThreads), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
              conv_cuda::nhwc<const T>(a.input), a.out.ptr<T>(), a.out.strides[0], inv);
      FK_CUDA_CHECK_LAUNCH();
    });
  });
}

FK_REGISTER_IMPL("global_avg_pool", cuda, global_avg_pool_cuda);

}  // namespace
}  // namespace fk::ops
