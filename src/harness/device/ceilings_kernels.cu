// Kernels of `fk env --measure`: a vectorised device-to-device copy and an fp32 FMA-rate
// kernel of independent chains.
#include "harness/device/ceilings_cuda.h"
#include "fk/cuda/check.h"

namespace fk::bench::detail {

namespace {

// Each thread keeps kUnroll independent 16-byte loads in flight, then stores them; the
// grid strides over the buffer. Streaming hints (evict-first): the data is touched once.
template <int kUnroll>
__global__ void __launch_bounds__(1024) copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                                    size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = __ldcs(src + i + u * stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) __stcs(dst + i + u * stride, v[u]);
  }
  for (; i < n; i += stride) __stcs(dst + i, __ldcs(src + i));
}

constexpr int kFmaChains = 8;   // independent dependency chains per thread
constexpr int kFmaUnroll = 16;  // FMAs per chain per loop iteration
constexpr int kFmaThreads = 256;

// x = x * a + b on kFmaChains independent registers: enough independent work per warp
// to hide the FMA latency at full occupancy. a and b are kernel arguments, so the
// compiler cannot fold the chains; the sum is stored so they are not dead.
__global__ void __launch_bounds__(kFmaThreads) fma_kernel(float* out, int iterations, float a, float b) {
  float x[kFmaChains];
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) x[c] = static_cast<float>(threadIdx.x + c) * 1e-3f;
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int u = 0; u < kFmaUnroll; ++u) {
#pragma unroll
      for (int c = 0; c < kFmaChains; ++c) x[c] = fmaf(x[c], a, b);
    }
  }
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < kFmaChains; ++c) s += x[c];
  out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = s;
}

template <int kUnroll>
int copy_blocks_per_sm(int threads) {
  int blocks = 0;
  FK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, copy_kernel<kUnroll>, threads, 0));
  return std::max(blocks, 1);
}

}  // namespace

std::vector<CopyConfig> copy_kernel_configs() {
  return {{256, 2}, {256, 4}, {512, 2}, {512, 4}, {1024, 2}, {1024, 4}, {256, 8}};
}

void launch_copy_kernel(const void* src, void* dst, size_t bytes, CopyConfig config, int sm_count, cudaStream_t s) {
  FK_CHECK(bytes % 16 == 0, "copy kernel: ", bytes, " bytes is not a multiple of 16");
  const size_t n = bytes / 16;
  auto go = [&](auto unroll_tag) {
    constexpr int U = decltype(unroll_tag)::value;
    const int blocks = sm_count * copy_blocks_per_sm<U>(config.threads);
    copy_kernel<U><<<blocks, config.threads, 0, s>>>(static_cast<const uint4*>(src), static_cast<uint4*>(dst), n);
  };
  switch (config.unroll) {
    case 2: go(std::integral_constant<int, 2>{}); break;
    case 4: go(std::integral_constant<int, 4>{}); break;
    case 8: go(std::integral_constant<int, 8>{}); break;
    default: FK_FAIL(FK_ERR_INVALID_ARGUMENT, "copy kernel: unroll ", config.unroll, " is not 2, 4 or 8");
  }
  FK_CUDA_CHECK_LAUNCH();
}

FmaShape fma_shape(int sm_count, int iterations) {
  int per_sm = 0;
  FK_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fma_kernel, kFmaThreads, 0));
  FmaShape s;
  s.threads = kFmaThreads;
  s.blocks = sm_count * std::max(per_sm, 1);
  s.flops = 2.0 * kFmaChains * kFmaUnroll * static_cast<double>(iterations) * s.blocks * s.threads;
  return s;
}

void launch_fma_kernel(const FmaShape& shape, float* out, int iterations, cudaStream_t s) {
  // |a| < 1 and a small b keep every chain bounded and normal: no overflow, no denormals.
  fma_kernel<<<shape.blocks, shape.threads, 0, s>>>(out, iterations, 0.999999f, 1e-6f);
  FK_CUDA_CHECK_LAUNCH();
}

}  // namespace fk::bench::detail
