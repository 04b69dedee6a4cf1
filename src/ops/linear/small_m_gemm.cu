#include "ops/linear/small_m_gemm.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cstdint>

#include "fk/cuda/check.h"
#include "fk/cuda/mma.cuh"
#include "fk/cuda/pdl.cuh"
#include "fk/cuda/sm_count.h"
#include "fk/cuda/vec.cuh"
#include "ops/linear/streaming_load.cuh"
#include "ops/linear/small_m_fragment.h"
#include "ops/linear/small_m_plan.h"

namespace fk::ops {
namespace {

using small_m::kChunkK;
using small_m::kElemsPerLane;
using small_m::kStepsPerChunk;
using small_m::kTilesPerWarp;
using small_m::kUnroll;
using small_m::kWarps;

__device__ __forceinline__ uint4 load_input(const void* p) { return __ldg(static_cast<const uint4*>(p)); }

// Word i of a 16-byte chunk; i is a constant after unrolling, so this is a register pick.
__device__ __forceinline__ uint32_t word(const uint4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

using cuda::mma_16x8x16;

// One 32-k chunk: the lane's input words of rows g (lo) and g + 8 (hi) against its weight
// words of each of the warp's n-tiles, two mma steps (small_m_fragment.h has the mapping).
// Without kHigh (M <= 8) the rows g + 8 are zero registers.
template <class T, bool kHigh>
__device__ __forceinline__ void mma_chunk(float (&acc)[kTilesPerWarp][4], const uint4 (&w)[kTilesPerWarp],
                                          const uint4& lo, const uint4& hi) {
#pragma unroll
  for (int s = 0; s < kStepsPerChunk; ++s) {
    uint32_t a[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int j = small_m::a_word(s, r);
      a[r] = small_m::a_row_half(r) == 0 ? word(lo, j) : (kHigh ? word(hi, j) : 0u);
    }
#pragma unroll
    for (int t = 0; t < kTilesPerWarp; ++t)
      mma_16x8x16<T>(acc[t], a, word(w[t], small_m::b_word(s, 0)), word(w[t], small_m::b_word(s, 1)));
  }
}

// Grid: small_m::plan_grid. Warp `warp` of a block works on unit blockIdx.x * (kWarps / ks)
// + warp / ks (n-tiles of rows n0 .. n0 + 8 * kTilesPerWarp - 1) over K-slice warp % ks.
// Lane (g, q) loads 16 bytes per chunk from weight rows n0 + 8t + g (a row past N loads a
// duplicate of row N - 1, its result is dropped) and from input rows g and g + 8 (rows past
// M are zero, not loaded).
template <class T, bool kHigh>
__global__ __launch_bounds__(kWarps * 32, 2) void small_m_gemm_kernel(T* __restrict__ out, int64_t ld_out,
                                                                    const T* __restrict__ input, int64_t ld_input,
                                                                    const T* __restrict__ weight, int64_t ld_weight,
                                                                    const T* __restrict__ bias, int M, int64_t N,
                                                                    int64_t K, int ks_log2) {
  constexpr int U = kUnroll, R = kTilesPerWarp;
  __shared__ float partial[kWarps][R][4][32];  // [warp][tile][C element][lane]: slices 1.. of each unit

  const int lane = static_cast<int>(threadIdx.x) & 31, warp = static_cast<int>(threadIdx.x) >> 5;
  const int g = lane >> 2, q = lane & 3;
  const int ks = 1 << ks_log2;
  const int slice = warp & (ks - 1);
  const int64_t unit = static_cast<int64_t>(blockIdx.x) * (kWarps >> ks_log2) + (warp >> ks_log2);
  const int64_t n0 = unit * small_m::kRowsPerUnit;
  const bool active = n0 < N;  // a block's last units may lie past N

  float acc[R][4];
#pragma unroll
  for (int t = 0; t < R; ++t)
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[t][i] = 0.f;

  const T* w_row[R];
#pragma unroll
  for (int t = 0; t < R; ++t) {
    const int64_t n = n0 + 8 * t + g;
    w_row[t] = weight + (n < N ? n : N - 1) * ld_weight + kElemsPerLane * q;
  }
  const int64_t full_chunks = K / kChunkK;
  const int64_t c_begin = small_m::slice_begin(full_chunks, ks, slice);  // this warp's K-slice
  const int64_t c_end = small_m::slice_begin(full_chunks, ks, slice + 1);
  // Launched with PDL: while the kernel that produces `input` still runs, pull this lane's
  // first kUnroll weight chunks into L2 (see skinny_gemm.cu).
  if (active)
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (c_begin + u < c_end)
#pragma unroll
        for (int t = 0; t < R; ++t) cuda::prefetch_l2(w_row[t] + (c_begin + u) * kChunkK);
  cuda::pdl_wait();
  cuda::pdl_trigger();

  if (active) {
    const bool has_lo = g < M, has_hi = kHigh && g + 8 < M;
    const T* x_lo = input + (has_lo ? g : 0) * ld_input + kElemsPerLane * q;
    const T* x_hi = input + (has_hi ? g + 8 : 0) * ld_input + kElemsPerLane * q;
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);

    int64_t c = c_begin;
    // kUnroll chunks per iteration: all R x kUnroll weight loads are issued before the first
    // mma waits on one.
    for (; c + U <= c_end; c += U) {
      uint4 w[U][R], lo[U], hi[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int t = 0; t < R; ++t) w[u][t] = load_streaming(w_row[t] + (c + u) * kChunkK);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        lo[u] = has_lo ? load_input(x_lo + (c + u) * kChunkK) : zero;
        hi[u] = has_hi ? load_input(x_hi + (c + u) * kChunkK) : zero;
      }
#pragma unroll
      for (int u = 0; u < U; ++u) mma_chunk<T, kHigh>(acc, w[u], lo[u], hi[u]);
    }
    for (; c < c_end; ++c) {
      uint4 w[R];
#pragma unroll
      for (int t = 0; t < R; ++t) w[t] = load_streaming(w_row[t] + c * kChunkK);
      const uint4 lo = has_lo ? load_input(x_lo + c * kChunkK) : zero;
      const uint4 hi = has_hi ? load_input(x_hi + c * kChunkK) : zero;
      mma_chunk<T, kHigh>(acc, w, lo, hi);
    }
    // The partial chunk (K % 32 = 8, 16 or 24): lanes past K hold zeros in both operands.
    if (slice == ks - 1 && full_chunks * kChunkK < K) {
      const int64_t off = full_chunks * kChunkK;
      const bool valid = off + kElemsPerLane * q < K;
      uint4 w[R];
#pragma unroll
      for (int t = 0; t < R; ++t) w[t] = valid ? load_streaming(w_row[t] + off) : zero;
      const uint4 lo = valid && has_lo ? load_input(x_lo + off) : zero;
      const uint4 hi = valid && has_hi ? load_input(x_hi + off) : zero;
      mma_chunk<T, kHigh>(acc, w, lo, hi);
    }
  }

  // Slices 1 .. ks-1 of a unit hand their sums to slice 0 (the preceding warp of the block),
  // which adds them in slice order.
  constexpr int kElems = kHigh ? 4 : 2;  // C elements 2, 3 are rows g + 8
  if (ks > 1) {  // uniform over the block
    if (active && slice != 0) {
#pragma unroll
      for (int t = 0; t < R; ++t)
#pragma unroll
        for (int i = 0; i < kElems; ++i) partial[warp][t][i][lane] = acc[t][i];
    }
    __syncthreads();
    if (!active || slice != 0) return;
    for (int s = 1; s < ks; ++s) {
#pragma unroll
      for (int t = 0; t < R; ++t)
#pragma unroll
        for (int i = 0; i < kElems; ++i) acc[t][i] += partial[warp + s][t][i][lane];
    }
  } else if (!active) {
    return;
  }

#pragma unroll
  for (int t = 0; t < R; ++t)
#pragma unroll
    for (int i = 0; i < kElems; ++i) {
      const int m = small_m::c_row(g, i);
      const int64_t n = n0 + 8 * t + small_m::c_col(q, i);
      if (m < M && n < N) {
        float v = acc[t][i];
        if (bias) v += cuda::to_float(bias[n]);
        out[m * ld_out + n] = cuda::from_float<T>(v);
      }
    }
}

template <class T, bool kHigh>
void launch_rows(const SkinnyGemm& g, const small_m::Grid& grid, cudaStream_t s) {
  cuda::launch_pdl(small_m_gemm_kernel<T, kHigh>, dim3(static_cast<unsigned>(grid.blocks)), dim3(kWarps * 32), 0, s,
                   static_cast<T*>(g.out), g.ld_out, static_cast<const T*>(g.input), g.ld_input,
                   static_cast<const T*>(g.weight), g.ld_weight, static_cast<const T*>(g.bias), static_cast<int>(g.M),
                   g.N, g.K, grid.ks_log2);
}

template <class T>
void launch(const SkinnyGemm& g, const small_m::Grid& grid, cudaStream_t s) {
  if (g.M > 8)
    launch_rows<T, true>(g, grid, s);
  else
    launch_rows<T, false>(g, grid, s);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

bool small_m_gemm_applies(const SkinnyGemm& g) {
  return g.M >= 1 && g.M <= kSmallMMaxRows && g.N >= 1 && (g.dtype == DType::bf16 || g.dtype == DType::f16) &&
         g.K > 0 && g.K % 8 == 0 && aligned16(g.input) && aligned16(g.weight) && (g.M == 1 || g.ld_input % 8 == 0) &&
         (g.N == 1 || g.ld_weight % 8 == 0);
}

void small_m_gemm(const SkinnyGemm& g, void* stream) {
  FK_CHECK(small_m_gemm_applies(g), "small_m_gemm: the problem does not fit the kernel (M=", g.M, " N=", g.N,
           " K=", g.K, ")");
  const small_m::Grid grid = small_m::plan_grid(g.N, g.K, cuda::current_sm_count());
  FK_CHECK(grid.blocks <= INT_MAX, "small_m_gemm: N=", g.N, " needs more blocks than a grid holds");
  const auto s = static_cast<cudaStream_t>(stream);
  if (g.dtype == DType::bf16)
    launch<__nv_bfloat16>(g, grid, s);
  else
    launch<__half>(g, grid, s);
}

}  // namespace fk::ops
