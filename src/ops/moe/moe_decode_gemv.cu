// The GEMV decode path of fused_experts (moe_decode_gemv.h). Each warp owns output
// columns and walks K in 16-byte steps per lane (256 elements a step), with kUnroll steps
// of weight loads in flight; the activation row (x, or a slot's intermediate row) is read
// by every warp of the CTA and stays in L1, the weights stream past it.
#include "ops/moe/moe_decode_gemv.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fk/cuda/check.h"
#include "fk/cuda/vec.cuh"
#include "ops/activation/act_kernels.cuh"
#include "ops/common/env_switch.h"
#include "ops/linear/streaming_load.cuh"

namespace fk::ops::moe_decode {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kUnroll = 4;  // 16-byte steps per lane in flight per weight row

template <class Act>
__device__ __forceinline__ void fma8(float& acc, const uint4& w, const cuda::Vec16<Act>& x) {
  const auto& wv = *reinterpret_cast<const cuda::Vec16<Act>*>(&w);
#pragma unroll
  for (int q = 0; q < 8; ++q) acc += cuda::to_float(wv.v[q]) * cuda::to_float(x.v[q]);
}

// Lane-partial dot products of kRows weight rows w[r] with the activation row x over K (a
// multiple of 8) elements. The weight loads of kUnroll steps are issued before their FMAs.
// kPred = false: whole groups of kUnroll steps, then single steps; kPred = true: groups
// with the steps past K predicated off, so a K shorter than a group still has all its
// loads in flight. (Measured per kernel: bench/results/h100/fused_experts_gemv_variants.json.)
template <class Act, int kRows, bool kPred>
__device__ __forceinline__ void dot_rows(float (&acc)[kRows], const Act* const (&w)[kRows], const Act* x, int K,
                                         int lane) {
  int k0 = lane * 8;
  if constexpr (!kPred) {
    for (; k0 + (kUnroll - 1) * 256 < K; k0 += kUnroll * 256) {
      uint4 wv[kRows][kUnroll];
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) wv[r][u] = load_streaming(w[r] + k0 + u * 256);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const cuda::Vec16<Act> xv = cuda::load16(x + k0 + u * 256);
#pragma unroll
        for (int r = 0; r < kRows; ++r) fma8<Act>(acc[r], wv[r][u], xv);
      }
    }
    for (; k0 < K; k0 += 256) {
      const cuda::Vec16<Act> xv = cuda::load16(x + k0);
#pragma unroll
      for (int r = 0; r < kRows; ++r) fma8<Act>(acc[r], load_streaming(w[r] + k0), xv);
    }
  } else {
    for (; k0 < K; k0 += kUnroll * 256) {
      uint4 wv[kRows][kUnroll];
#pragma unroll
      for (int r = 0; r < kRows; ++r)
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
          if (k0 + u * 256 < K) wv[r][u] = load_streaming(w[r] + k0 + u * 256);
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (k0 + u * 256 >= K) break;
        const cuda::Vec16<Act> xv = cuda::load16(x + k0 + u * 256);
#pragma unroll
        for (int r = 0; r < kRows; ++r) fma8<Act>(acc[r], wv[r][u], xv);
      }
    }
  }
}

// grid (ceil(I / kWarps), T * k): warp w of CTA x computes intermediate column
// i = x * kWarps + w of slot blockIdx.y (its gate and up rows together). K = H is usually a
// multiple of the kUnroll-step stride: unpredicated steps.
template <class Act>
__global__ void __launch_bounds__(kThreads) gate_up_gemv_kernel(Act* inter, const Act* hidden, int64_t ld_hidden,
                                                                const Act* w13, const int32_t* ids, int top_k, int E,
                                                                int H, int I) {
  const int slot = blockIdx.y, lane = threadIdx.x & 31;
  const int i = blockIdx.x * kWarps + (threadIdx.x >> 5);
  const int e = ids[slot];
  if (i >= I || e < 0 || e >= E) return;  // a dropped slot's row is never read
  const Act* x = hidden + static_cast<int64_t>(slot / top_k) * ld_hidden;
  const Act* gate = w13 + (static_cast<int64_t>(e) * 2 * I + i) * H;
  const Act* const w[2] = {gate, gate + static_cast<int64_t>(I) * H};
  float acc[2] = {};
  dot_rows<Act, 2, /*kPred=*/false>(acc, w, x, H, lane);
  const float g = cuda::warp_sum(acc[0]), u = cuda::warp_sum(acc[1]);
  if (lane == 0)
    inter[static_cast<int64_t>(slot) * I + i] = cuda::from_float<Act>(act_cuda::SiluAndMulOp<true>{}(g, u));
}

// grid (ceil(H / kWarps), T): warp w of CTA x computes out[t, h], h = x * kWarps + w, over
// the token's k slots in order. K = I is short (768 for Qwen3-30B-A3B: three steps):
// predicated steps keep all of a row's loads in flight.
template <class Act>
__global__ void __launch_bounds__(kThreads) down_gemv_kernel(Act* out, const Act* inter, const Act* w2,
                                                             const int32_t* ids, const float* weights, int top_k,
                                                             int E, int H, int I) {
  const int t = blockIdx.y, lane = threadIdx.x & 31;
  const int h = blockIdx.x * kWarps + (threadIdx.x >> 5);
  if (h >= H) return;
  float total = 0.f;
  for (int j = 0; j < top_k; ++j) {
    const int slot = t * top_k + j, e = ids[slot];
    if (e < 0 || e >= E) continue;
    const Act* const w[1] = {w2 + (static_cast<int64_t>(e) * H + h) * I};
    float acc[1] = {};
    dot_rows<Act, 1, /*kPred=*/true>(acc, w, inter + static_cast<int64_t>(slot) * I, I, lane);
    total += weights[slot] * acc[0];  // lane partials, j in order: the warp sum comes once, at the end
  }
  total = cuda::warp_sum(total);
  if (lane == 0) out[static_cast<int64_t>(t) * H + h] = cuda::from_float<Act>(total);
}

}  // namespace

bool use_decode_gemv(const FusedExpertsShape& sh) {
  static const bool enabled = env_switch_on("FK_MOE_DECODE_GEMV");
  return enabled && !sh.fp8 && sh.T <= kMaxTokens;
}

template <class Act>
void run_decode_gemv(const FusedExpertsArgs& a, const FusedExpertsShape& sh, const MoeWorkspace& ws,
                     cudaStream_t s) {
  const auto* ids = static_cast<const int32_t*>(a.topk_ids.data);
  auto* inter = static_cast<Act*>(ws.intermediate);
  const dim3 gate_grid(static_cast<unsigned>((sh.I + kWarps - 1) / kWarps), static_cast<unsigned>(sh.T * sh.k));
  gate_up_gemv_kernel<Act><<<gate_grid, kThreads, 0, s>>>(
      inter, static_cast<const Act*>(a.hidden.data), a.hidden.strides[0], static_cast<const Act*>(a.w13.data), ids,
      static_cast<int>(sh.k), static_cast<int>(sh.E), static_cast<int>(sh.H), static_cast<int>(sh.I));
  FK_CUDA_CHECK_LAUNCH();
  const dim3 down_grid(static_cast<unsigned>((sh.H + kWarps - 1) / kWarps), static_cast<unsigned>(sh.T));
  down_gemv_kernel<Act><<<down_grid, kThreads, 0, s>>>(
      static_cast<Act*>(a.out.data), inter, static_cast<const Act*>(a.w2.data), ids,
      static_cast<const float*>(a.topk_weights.data), static_cast<int>(sh.k), static_cast<int>(sh.E),
      static_cast<int>(sh.H), static_cast<int>(sh.I));
  FK_CUDA_CHECK_LAUNCH();
}

template void run_decode_gemv<__nv_bfloat16>(const FusedExpertsArgs&, const FusedExpertsShape&, const MoeWorkspace&,
                                              cudaStream_t);
template void run_decode_gemv<__half>(const FusedExpertsArgs&, const FusedExpertsShape&, const MoeWorkspace&,
                                      cudaStream_t);

}  // namespace fk::ops::moe_decode
