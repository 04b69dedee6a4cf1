#include "ops/linear/skinny_gemm.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"

namespace fk::ops {
namespace {

constexpr int kWarps = 8;     // warps per block, one weight row each
constexpr int kUnroll = 4;    // 16-byte weight loads in flight per thread

// A weight chunk is read once: stream it past L1 so that the input rows (read by every
// warp) stay there.
__device__ __forceinline__ uint4 load_streaming(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

__device__ __forceinline__ float2 to_float2(uint32_t bits, __nv_bfloat16) {
  return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&bits));
}
__device__ __forceinline__ float2 to_float2(uint32_t bits, __half) {
  return __half22float2(*reinterpret_cast<const __half2*>(&bits));
}

// Dot product of 8 weight and 8 input elements (one 16-byte chunk each), added to acc.
template <class T>
__device__ __forceinline__ float dot8(const uint4& w, const uint4& x, float acc) {
  const uint32_t ws[4] = {w.x, w.y, w.z, w.w}, xs[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 a = to_float2(ws[i], T{}), b = to_float2(xs[i], T{});
    acc = fmaf(a.x, b.x, acc);
    acc = fmaf(a.y, b.y, acc);
  }
  return acc;
}

// Block: kWarps warps; warp w of block b computes output column n = b * kWarps + w for all
// M rows. Lane l takes the weight row's 16-byte chunks l, l + 32, ... (coalesced 512-byte
// warp loads), kUnroll of them in flight; the M partial sums are reduced across the warp.
template <class T, int M>
__global__ __launch_bounds__(kWarps * 32) void skinny_gemm_kernel(T* __restrict__ out, int64_t ld_out,
                                                                  const T* __restrict__ input, int64_t ld_input,
                                                                  const T* __restrict__ weight, int64_t ld_weight,
                                                                  const T* __restrict__ bias, int64_t N, int64_t K) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int64_t n = static_cast<int64_t>(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (n >= N) return;
  const T* w_row = weight + n * ld_weight;
  const int64_t chunks = K / 8;
  float acc[M];
#pragma unroll
  for (int m = 0; m < M; ++m) acc[m] = 0.f;

  int64_t c = lane;
  for (; c + 32 * (kUnroll - 1) < chunks; c += 32 * kUnroll) {
    uint4 w[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) w[u] = load_streaming(w_row + (c + 32 * u) * 8);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
#pragma unroll
      for (int m = 0; m < M; ++m)
        acc[m] = dot8<T>(w[u], __ldg(reinterpret_cast<const uint4*>(input + m * ld_input + (c + 32 * u) * 8)), acc[m]);
  }
  for (; c < chunks; c += 32) {
    const uint4 w = load_streaming(w_row + c * 8);
#pragma unroll
    for (int m = 0; m < M; ++m)
      acc[m] = dot8<T>(w, __ldg(reinterpret_cast<const uint4*>(input + m * ld_input + c * 8)), acc[m]);
  }
#pragma unroll
  for (int m = 0; m < M; ++m)
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) acc[m] += __shfl_xor_sync(0xffffffffu, acc[m], off);
  if (lane < M) {
    float v = 0.f;
#pragma unroll
    for (int m = 0; m < M; ++m)
      if (m == lane) v = acc[m];
    if (bias) v += cuda::to_float(bias[n]);
    out[lane * ld_out + n] = cuda::from_float<T>(v);
  }
}

template <class T, int M>
void launch_rows(const SkinnyGemm& g, cudaStream_t s) {
  const auto blocks = static_cast<unsigned>((g.N + kWarps - 1) / kWarps);
  skinny_gemm_kernel<T, M><<<blocks, kWarps * 32, 0, s>>>(
      static_cast<T*>(g.out), g.ld_out, static_cast<const T*>(g.input), g.ld_input, static_cast<const T*>(g.weight),
      g.ld_weight, static_cast<const T*>(g.bias), g.N, g.K);
  FK_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch(const SkinnyGemm& g, cudaStream_t s) {
  switch (g.M) {
    case 1: return launch_rows<T, 1>(g, s);
    case 2: return launch_rows<T, 2>(g, s);
    case 3: return launch_rows<T, 3>(g, s);
    case 4: return launch_rows<T, 4>(g, s);
    case 5: return launch_rows<T, 5>(g, s);
    case 6: return launch_rows<T, 6>(g, s);
    case 7: return launch_rows<T, 7>(g, s);
    case 8: return launch_rows<T, 8>(g, s);
    default: FK_FAIL(FK_ERR_INTERNAL, "skinny_gemm: M = ", g.M, " outside [1, ", kSkinnyMaxRows, "]");
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool skinny_gemm_applies(const SkinnyGemm& g) {
  return g.M >= 1 && g.M <= kSkinnyMaxRows && g.N >= 1 && (g.dtype == DType::bf16 || g.dtype == DType::f16) &&
         g.K % 8 == 0 && g.K > 0 && aligned16(g.input) && aligned16(g.weight) && (g.M == 1 || g.ld_input % 8 == 0) &&
         (g.N == 1 || g.ld_weight % 8 == 0);
}

void skinny_gemm(const SkinnyGemm& g, void* stream) {
  FK_CHECK(skinny_gemm_applies(g), "skinny_gemm: the problem does not fit the kernel (M=", g.M, " N=", g.N, " K=", g.K,
           ")");
  const auto s = static_cast<cudaStream_t>(stream);
  if (g.dtype == DType::bf16)
    launch<__nv_bfloat16>(g, s);
  else
    launch<__half>(g, s);
}

}  // namespace fk::ops
