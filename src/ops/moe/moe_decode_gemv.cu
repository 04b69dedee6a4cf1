// The GEMV decode path of fused_experts (moe_decode_gemv.h). Each warp owns output
// columns and walks K in 16-byte steps per lane (256 elements a step), with kUnroll steps
// of weight loads in flight; the activation row (x, or a slot's intermediate row) is read
// by every warp of the CTA and stays in L1, the weights stream past it.
#include "ops/moe/moe_decode_gemv.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fk/cuda/check.h"
#include "fk/cuda/pdl.cuh"
#include "fk/cuda/sm_count.h"
#include "fk/cuda/vec.cuh"
#include "ops/activation/act_kernels.cuh"
#include "ops/common/variant_flag.h"
#include "ops/linear/streaming_load.cuh"

namespace fk::ops::moe_decode {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kUnroll = 4;  // 16-byte steps per lane in flight per weight row

// Register budgets that keep a whole decode grid resident at once. A grid that takes two waves leaves
// the second one streaming with a fraction of the SMs' loads in flight. Measured on an
// H100, Qwen3-30B-A3B batch-1 decode 3.34 -> 3.15 ms (bench/results/h100/moe_decode_occupancy.json):
//  - gate_up at 6 CTAs per SM (40 registers, from 47 and 5 per SM): Qwen3's 96 x 8 CTAs
//    fit 132 SMs in one wave. Only where the grid fits at 6 and not at 5 (OLMoE's 1,024
//    CTAs take two waves either way and ran 1% slower bounded; batch 4 too);
//  - down with 2 steps in flight per lane at 4 CTAs per SM (64 registers, from 118 and 2
//    per SM): Qwen3's 512 CTAs in one wave, and more warps streaming per SM; faster at every
//    MoE shape measured (1-4 tokens, Qwen3, OLMoE, Qwen1.5-MoE).
constexpr int kGateUpMinBlocks = 6;
constexpr int kDownUnroll = 2, kDownMinBlocks = 4;

template <class Act>
__device__ __forceinline__ void fma8(float& acc, const uint4& w, const cuda::Vec16<Act>& x) {
  const auto& wv = *reinterpret_cast<const cuda::Vec16<Act>*>(&w);
#pragma unroll
  for (int q = 0; q < 8; ++q) acc += cuda::to_float(wv.v[q]) * cuda::to_float(x.v[q]);
}

// Lane-partial dot products of kRows weight rows w[r] with the activation row x over K (a
// multiple of 8) elements: whole groups of kUnroll steps, their weight loads issued before
// their FMAs, then single steps. (Other variants measured:
// bench/results/h100/fused_experts_gemv_variants.json.)
template <class Act, int kRows>
__device__ __forceinline__ void dot_rows(float (&acc)[kRows], const Act* const (&w)[kRows], const Act* x, int K,
                                         int lane) {
  int k0 = lane * 8;
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
}

// grid (ceil(I / kWarps), T * k): warp w of CTA x computes intermediate column
// i = x * kWarps + w of slot blockIdx.y (its gate and up rows together). Launched with
// PDL: the routing (topk_ids [T, k], which the routing kernel before this one wrote) is
// read after pdl_wait(), which every CTA passes before any returns (the down kernel
// relies on it, see there).
// kMinBlocks: 0 (no register bound) or kGateUpMinBlocks.
template <class Act, int kMinBlocks>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    gate_up_gemv_kernel(Act* inter, const Act* hidden, int64_t ld_hidden, const Act* w13, const int32_t* topk_ids,
                        int top_k, int E, int H, int I) {
  cuda::pdl_wait();
  cuda::pdl_trigger();
  const int slot = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int i = blockIdx.x * kWarps + warp;
  const int t = slot / top_k;
  const int e = topk_ids[slot];
  if (i >= I || e < 0 || e >= E) return;  // a dropped slot's row is never read
  const Act* x = hidden + static_cast<int64_t>(t) * ld_hidden;
  const Act* gate = w13 + (static_cast<int64_t>(e) * 2 * I + i) * H;
  const Act* const w[2] = {gate, gate + static_cast<int64_t>(I) * H};
  float acc[2] = {};
  dot_rows<Act, 2>(acc, w, x, H, lane);
  const float g = cuda::warp_sum(acc[0]), u = cuda::warp_sum(acc[1]);
  if (lane == 0)
    inter[static_cast<int64_t>(slot) * I + i] = cuda::from_float<Act>(act_cuda::SiluAndMulOp<true>{}(g, u));
}

constexpr int kDownCols = 4;  // output columns h per CTA of the down kernel

// grid (ceil(H / kDownCols), T): CTA x computes out[t, h] for its kDownCols columns h. Its
// warps split the work items (slot j, K part p), j < k, p < parts (parts = kWarps / k when
// k < kWarps, so every warp has rows to stream): warp w takes items w, w + kWarps, ... and
// sums topk_weights[t, j] * (w2[e_j, h] . inter[t * k + j]) over them, in order; the warps'
// sums are then added in warp order. Fixed order throughout: deterministic.
//
// The first kDownUnroll steps of weight loads are issued before pdl_wait(), so they stream
// while the gate_up kernel still runs. That reads the routing before the wait: safe,
// because it comes from the kernel before gate_up (the routing kernel's topk_ids and
// topk_weights), and the gate_up kernel (the only kernel between) lets this one start only
// after its own pdl_wait() has seen that kernel complete. What gate_up writes (`inter`)
// is read after the wait.
template <class Act>
__global__ void __launch_bounds__(kThreads, kDownMinBlocks)
    down_gemv_kernel(Act* out, const Act* inter, const Act* w2, const int32_t* topk_ids, const float* topk_weights,
                     int top_k, int parts, int E, int H, int I) {
  __shared__ float warp_total[kWarps][kDownCols];
  const int t = blockIdx.y, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int32_t* ids = topk_ids + static_cast<int64_t>(t) * top_k;
  const float* weights = topk_weights + static_cast<int64_t>(t) * top_k;
  const int h0 = blockIdx.x * kDownCols;
  const int chunks = I / 8;  // 16-byte chunks of a row
  // Chunks per part, whole warp steps (32 chunks), so parts start on a step.
  const int part_chunks = ((chunks + parts - 1) / parts + 31) / 32 * 32;
  const int items = top_k * parts;
  float total[kDownCols] = {};
  bool waited = false;
  for (int item = warp; item < items; item += kWarps) {
    const int j = item / parts, part = item % parts;
    const int slot = t * top_k + j, e = ids[j];
    const int begin = part * part_chunks, end = min(chunks, begin + part_chunks);
    if (e < 0 || e >= E || begin >= end) continue;  // a dropped slot adds nothing
    const Act* rows[kDownCols];
#pragma unroll
    for (int c = 0; c < kDownCols; ++c)  // past H: a duplicate row, its sum unused
      rows[c] = w2 + (static_cast<int64_t>(e) * H + min(h0 + c, H - 1)) * I;
    float acc[kDownCols] = {};
    const Act* x = inter + static_cast<int64_t>(slot) * I;
    uint4 wv[kDownCols][kDownUnroll];
    for (int c0 = begin + lane; c0 < end; c0 += 32 * kDownUnroll) {
#pragma unroll
      for (int c = 0; c < kDownCols; ++c)
#pragma unroll
        for (int u = 0; u < kDownUnroll; ++u)
          if (c0 + 32 * u < end) wv[c][u] = load_streaming(rows[c] + (c0 + 32 * u) * 8);
      if (!waited) {  // the first steps' loads are in flight: now wait for inter
        cuda::pdl_wait();
        waited = true;
      }
#pragma unroll
      for (int u = 0; u < kDownUnroll; ++u) {
        if (c0 + 32 * u >= end) break;
        const cuda::Vec16<Act> xv = cuda::load16(x + (c0 + 32 * u) * 8);
#pragma unroll
        for (int c = 0; c < kDownCols; ++c) fma8<Act>(acc[c], wv[c][u], xv);
      }
    }
    const float wt = weights[j];
#pragma unroll
    for (int c = 0; c < kDownCols; ++c) total[c] += wt * acc[c];  // lane partials; the warp sum comes once
  }
  if (!waited) cuda::pdl_wait();  // a warp with no rows still waits before the CTA writes
  cuda::pdl_trigger();  // the next kernel (a norm) may launch; it waits for this one's writes
#pragma unroll
  for (int c = 0; c < kDownCols; ++c) {
    const float v = cuda::warp_sum(total[c]);
    if (lane == 0) warp_total[warp][c] = v;
  }
  __syncthreads();
  if (threadIdx.x < kDownCols && h0 + static_cast<int>(threadIdx.x) < H) {
    float v = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v += warp_total[w][threadIdx.x];
    out[static_cast<int64_t>(t) * H + h0 + threadIdx.x] = cuda::from_float<Act>(v);
  }
}

template <class Act>
void launch_gemvs(const FusedExpertsArgs& a, const FusedExpertsShape& sh, const MoeWorkspace& ws, cudaStream_t s) {
  auto* inter = static_cast<Act*>(ws.intermediate);
  const auto* ids = static_cast<const int32_t*>(a.topk_ids.data);
  const auto* weights = static_cast<const float*>(a.topk_weights.data);
  const dim3 gate_grid(static_cast<unsigned>((sh.I + kWarps - 1) / kWarps), static_cast<unsigned>(sh.T * sh.k));
  auto launch_gate_up = [&](auto kernel) {
    cuda::launch_pdl(kernel, gate_grid, dim3(kThreads), 0, s, inter, static_cast<const Act*>(a.hidden.data),
                     a.hidden.strides[0], static_cast<const Act*>(a.w13.data), ids, static_cast<int>(sh.k),
                     static_cast<int>(sh.E), static_cast<int>(sh.H), static_cast<int>(sh.I));
  };
  // gate_up's register budget only where its grid then fits.
  const int64_t gate_ctas = static_cast<int64_t>(gate_grid.x) * gate_grid.y;
  if (gate_ctas <= kGateUpMinBlocks * cuda::current_sm_count())
    launch_gate_up(gate_up_gemv_kernel<Act, kGateUpMinBlocks>);
  else
    launch_gate_up(gate_up_gemv_kernel<Act, 0>);
  const dim3 down_grid(static_cast<unsigned>((sh.H + kDownCols - 1) / kDownCols), static_cast<unsigned>(sh.T));
  const int parts = sh.k < kWarps ? kWarps / static_cast<int>(sh.k) : 1;
  cuda::launch_pdl(down_gemv_kernel<Act>, down_grid, dim3(kThreads), 0, s, static_cast<Act*>(a.out.data),
                   static_cast<const Act*>(inter), static_cast<const Act*>(a.w2.data), ids, weights,
                   static_cast<int>(sh.k), parts, static_cast<int>(sh.E), static_cast<int>(sh.H),
                   static_cast<int>(sh.I));
}

}  // namespace

bool use_decode_gemv(const FusedExpertsShape& sh) {
  static const VariantFlag tiled("fused_experts", "tiled_decode");
  return !tiled.on() && !sh.fp8 && sh.T <= kMaxTokens;
}

template <class Act>
void run_decode_gemv(const FusedExpertsArgs& a, const FusedExpertsShape& sh, const MoeWorkspace& ws,
                     cudaStream_t s) {
  launch_gemvs<Act>(a, sh, ws, s);
}

template void run_decode_gemv<__nv_bfloat16>(const FusedExpertsArgs&, const FusedExpertsShape&, const MoeWorkspace&,
                                              cudaStream_t);
template void run_decode_gemv<__half>(const FusedExpertsArgs&, const FusedExpertsShape&, const MoeWorkspace&,
                                      cudaStream_t);

}  // namespace fk::ops::moe_decode
