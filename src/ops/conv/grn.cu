// grn CUDA baseline, three steps on the stream:
//   1. the channels' sums of squares into `scale` (zeroed first): a block takes 64 channels of
//      one image over a slice of its pixels, 4 threads per channel striding the slice, and adds
//      its partial sums with one atomicAdd per channel, so that a small batch still spreads
//      over the GPU;
//   2. one block per image turns them into norms, their mean over the channels (a block sum),
//      and the scale g / (mean + 1e-6) in place;
//   3. the element-wise output, gamma * (x * scale) + beta + x, one thread per element,
//      channels fastest.
// The input is read twice; reading it once (a cluster of blocks per image holding the sums
// in distributed shared memory) is a candidate's room.
#include <cuda_runtime.h>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/conv/conv_validate.h"
#include "ops/conv/nhwc.cuh"

namespace fk::ops {
namespace {

using conv_cuda::Nhwc;

constexpr int kGrnChannels = 64, kGrnLanes = 4, kGrnThreads = kGrnChannels * kGrnLanes;
constexpr int kGrnPixelsPerBlock = 1024;

template <class T>
__global__ void __launch_bounds__(kGrnThreads)
    grn_sum_squares_kernel(const Nhwc<const T> in, float* __restrict__ sums) {
  __shared__ float partial[kGrnLanes][kGrnChannels];
  const int n = blockIdx.z;
  const int c = blockIdx.y * kGrnChannels + threadIdx.x % kGrnChannels;
  const int lane = threadIdx.x / kGrnChannels;
  const int64_t pixels = static_cast<int64_t>(in.h) * in.w;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kGrnPixelsPerBlock;
  const int64_t last = min(pixels, first + kGrnPixelsPerBlock);
  float sum = 0.f;
  if (c < in.c)
    for (int64_t p = first + lane; p < last; p += kGrnLanes) {
      const float x = cuda::to_float(in.pixel(n, p / in.w, p % in.w)[c]);
      sum = fmaf(x, x, sum);
    }
  partial[lane][threadIdx.x % kGrnChannels] = sum;
  __syncthreads();
  if (lane == 0 && c < in.c) {
    float s = 0.f;
#pragma unroll
    for (int l = 0; l < kGrnLanes; ++l) s += partial[l][threadIdx.x];
    atomicAdd(sums + static_cast<int64_t>(n) * in.c + c, s);
  }
}

constexpr int kGrnScaleThreads = 256;

__global__ void __launch_bounds__(kGrnScaleThreads) grn_scale_kernel(float* __restrict__ scale, int C) {
  __shared__ float scratch[32];
  float* row = scale + static_cast<int64_t>(blockIdx.x) * C;
  float total = 0.f;
  for (int c = threadIdx.x; c < C; c += blockDim.x) total += sqrtf(row[c]);
  const float mean = cuda::block_sum(total, scratch) / static_cast<float>(C);
  const float inv = 1.f / (mean + 1e-6f);
  for (int c = threadIdx.x; c < C; c += blockDim.x) row[c] = sqrtf(row[c]) * inv;
}

constexpr int kGrnOutThreads = 256;

template <class T>
__global__ void __launch_bounds__(kGrnOutThreads)
    grn_out_kernel(const Nhwc<const T> in, const Nhwc<T> out, const float* __restrict__ scale,
                   const T* __restrict__ gamma, const T* __restrict__ beta) {
  const int C = in.c;
  const int64_t total = static_cast<int64_t>(in.n) * in.h * in.w * C;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % C);
    const int64_t pixel = i / C;
    const int w = static_cast<int>(pixel % in.w);
    const int64_t row = pixel / in.w;
    const int h = static_cast<int>(row % in.h);
    const int64_t n = row / in.h;
    const float x = cuda::to_float(in.pixel(n, h, w)[c]);
    const float s = scale[n * C + c];
    const float y = fmaf(cuda::to_float(__ldg(gamma + c)), x * s, cuda::to_float(__ldg(beta + c))) + x;
    out.pixel(n, h, w)[c] = cuda::from_float<T>(y);
  }
}

fk_status grn_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const GrnArgs*>(args);
    validate_grn(a, DeviceType::cuda);
    const int64_t N = a.input.shape[0], C = a.input.shape[3];
    if (N == 0) return;
    FK_CHECK(N <= 65535, a.kName, ": the CUDA baseline runs at most 65535 images, got ", N);
    const auto s = static_cast<cudaStream_t>(stream);
    float* scale = a.scale.ptr<float>();
    FK_CUDA_CHECK(cudaMemsetAsync(scale, 0, static_cast<size_t>(N * C) * sizeof(float), s));
    cuda::dispatch_float_dtype(a.input.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const Nhwc<const T> in = conv_cuda::nhwc<const T>(a.input);
      const int64_t pixels = a.input.shape[1] * a.input.shape[2];
      const dim3 grid(static_cast<unsigned>(cuda::ceil_div(pixels, kGrnPixelsPerBlock)),
                      static_cast<unsigned>(cuda::ceil_div(C, kGrnChannels)), static_cast<unsigned>(N));
      grn_sum_squares_kernel<T><<<grid, kGrnThreads, 0, s>>>(in, scale);
      FK_CUDA_CHECK_LAUNCH();
      grn_scale_kernel<<<static_cast<unsigned>(N), kGrnScaleThreads, 0, s>>>(scale, static_cast<int>(C));
      FK_CUDA_CHECK_LAUNCH();
      grn_out_kernel<T><<<conv_cuda::grid_for(a.out.numel(), kGrnOutThreads), kGrnOutThreads, 0, s>>>(
          in, conv_cuda::nhwc<T>(a.out), scale, a.gamma.ptr<const T>(), a.beta.ptr<const T>());
      FK_CUDA_CHECK_LAUNCH();
    });
  });
}

FK_REGISTER_IMPL("grn", cuda, grn_cuda);

}  // namespace
}  // namespace fk::ops
