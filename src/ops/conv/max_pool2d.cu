// max_pool2d CUDA baseline: one thread per output element, channels fastest (each warp reads
// 32 consecutive channels of a pixel per tap, coalesced), the window's taps inside the image
// compared in the input dtype's values as floats (exact: no rounding), NaN propagating.
// SPPF's pools (20x20x128, 5x5) are tiny and launch-bound; this is not where time goes.
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
struct PoolParams {
  Nhwc<const T> in;
  Nhwc<T> out;
  int kh, kw, sh, sw, ph, pw;
};

template <class T>
__global__ void __launch_bounds__(kThreads) max_pool2d_kernel(const PoolParams<T> p) {
  const int C = p.out.c;
  const int64_t total = static_cast<int64_t>(p.out.n) * p.out.h * p.out.w * C;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int c = static_cast<int>(i % C);
    const int64_t m = i / C;
    const int q = static_cast<int>(m % p.out.w);
    const int pp = static_cast<int>((m / p.out.w) % p.out.h);
    const int64_t n = m / (static_cast<int64_t>(p.out.w) * p.out.h);
    float best = -INFINITY;
    for (int r = 0; r < p.kh; ++r) {
      const int h = pp * p.sh - p.ph + r;
      if (h < 0 || h >= p.in.h) continue;
      for (int s = 0; s < p.kw; ++s) {
        const int x = q * p.sw - p.pw + s;
        if (x < 0 || x >= p.in.w) continue;
        const float v = cuda::to_float(p.in.pixel(n, h, x)[c]);
        if (v > best || isnan(v)) best = v;  // once NaN, nothing compares greater: it stays
      }
    }
    p.out.pixel(n, pp, q)[c] = cuda::from_float<T>(best);
  }
}

fk_status max_pool2d_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const MaxPool2dArgs*>(args);
    validate_max_pool2d(a, DeviceType::cuda);
    if (a.out.numel() == 0) return;
    cuda::dispatch_float_dtype(a.input.dtype, a.kName, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const PoolParams<T> p{conv_cuda::nhwc<const T>(a.input), conv_cuda::nhwc<T>(a.out), a.kernel_h, a.kernel_w,
                            a.stride_h, a.stride_w, a.pad_h, a.pad_w};
      max_pool2d_kernel<T>
          <<<conv_cuda::grid_for(a.out.numel(), kThreads), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(p);
      FK_CUDA_CHECK_LAUNCH();
    });
  });
}

FK_REGISTER_IMPL("max_pool2d", cuda, max_pool2d_cuda);

}  // namespace
}  // namespace fk::ops
