// fk's own paged decode attention: split-KV on tensor cores, then a merge kernel.
//
// A CTA owns one (chunk, KV head): it streams its chunk's K and V through a cp.async
// pipeline of kStages tiles of kTile = 32 tokens, and computes the tile with m16n8k16 MMAs
// whose 16 rows are the KV head's query heads (the GQA group, G <= 16; rows past G are
// zero):
//   QK:  warp w scores tokens 8w .. 8w + 7 of the tile (q fragments in registers, K by
//        ldmatrix), and puts the base-2 logits in shared memory;
//   softmax: every warp reads the tile's logits and keeps the same online max and sum;
//   PV:  warp w accumulates dims [w * D / 4, (w + 1) * D / 4) over the tile's 32 tokens
//        (probabilities as bf16/f16 A fragments, V by ldmatrix.trans).
// Per 32 tokens a warp issues 16 MMAs and 8 ldmatrix: the CUDA-core form this replaced
// spent ~650 instructions a warp on the same tile, which made it slower than FlashInfer's
// decode (bench/results/h100/split_kv_decode.json).
//
// PDL: the schedule and the page table are step inputs, and every KV row but each
// sequence's last was written before the kernel right before this one, so the first
// kStages - 1 tiles' K/V stream in before pdl_wait() (SplitKvDecodeLaunch::early_kv,
// fk/ops/attention.h states the contract); the last token's row and q are read after it.
//
// A sequence cut into several chunks: each CTA writes its normalised partial rows and
// lse, and split_kv_merge_kernel (launched right after) combines them in chunk order
// (deterministic). A single-chunk sequence is written directly.
//
// Pipeline depth (SplitKvDecodeLaunch::stages): 5 stages (89 KB) keep more KV in flight
// (batch 8 x 1k), 3 stages (53 KB) leave the SM more L1 after the kernel: Llama-3.1-8B's
// o/down GEMMs, which read their input rows through L1, took 1,943 us a batch-4 step after
// the deep kernel and 1,826 after the shallow one (bench/results/h100/split_kv_decode_tc.json).
// The schedule (items, chunks) comes from plan_split_kv (split_kv_schedule.h).
//
// Shapes: q [B, Hq, D] (strided rows), caches [P, page_size, Hk, D], out [B, Hq, D]
// contiguous, lse [B, Hq] (base 2); partials [grid_items, Hq, D] and [grid_items, Hq].
// Included by split_kv_decode_hd{64,128,256}.cu only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <cmath>

#include "fk/cuda/async_copy.cuh"
#include "fk/cuda/check.h"
#include "fk/cuda/mma.cuh"
#include "fk/cuda/pdl.cuh"
#include "fk/cuda/vec.cuh"
#include "ops/attention/cuda/attention_kernels.h"
#include "ops/attention/split_kv_schedule.h"

namespace fk::ops::attn::split_kv {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 32;  // KV tokens per pipeline stage: 8 per warp in QK
constexpr int kRows = 16;  // MMA rows: query heads of a group
constexpr float kLog2e = 1.4426950408889634f;

template <int D, int S>
struct Config {
  static constexpr int kStages = S;  // 17 KB a stage at D = 128 (SplitKvDecodeLaunch::stages)
  static constexpr int kRow = D + 8;  // padded rows: ldmatrix's 8 row addresses hit distinct banks
  static constexpr int kPieces = D / 8;          // 16-byte pieces of a row
  static constexpr int kKSteps = D / 16;         // QK MMA steps
  static constexpr int kWarpDims = D / kWarps;   // PV dims per warp
  static constexpr int kDimTiles = kWarpDims / 8;  // PV n-tiles per warp
  static_assert(kDimTiles % 2 == 0, "ldmatrix.x4.trans loads two n-tiles");
};

template <int D, int S, class T>
struct Smem {
  T k[S][kTile][Config<D, S>::kRow];
  T v[S][kTile][Config<D, S>::kRow];
  float logits[kRows][kTile];
};

__device__ __forceinline__ uint32_t load_pair(const void* p) { return *static_cast<const uint32_t*>(p); }

template <int D, int S, class T, bool kSoftCap>
__global__ void __launch_bounds__(kThreads) split_kv_decode_kernel(SplitKvDecodeLaunch p) {
  using C = Config<D, S>;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto& sm = *reinterpret_cast<Smem<D, S, T>*>(smem_raw);
  // Global loads here are issued in batches that do not wait for one another: a decode
  // CTA's life is a chain of memory round trips (item -> page numbers -> K/V -> partials),
  // and every extra link in it costs a microsecond at batch 1.
  const int32_t* sched = p.schedule;
  const int item = blockIdx.x, hk = blockIdx.y;
  const int num_items = sched[0];
  const int4 it = reinterpret_cast<const int4*>(sched + SplitKvSchedule::kItemsOffset)[item];  // zeros past the items
  const bool live = item < num_items;  // else a padding slot of a graph-mode grid
  const int b = it.x, kv_begin = it.y, kv_end = it.z;
  const int32_t* pages = p.kv_indices + it.w;
  const int2 seq = reinterpret_cast<const int2*>(sched + SplitKvSchedule::kItemsOffset + 4 * p.grid_items)[b];
  const int Hq = p.num_qo_heads, Hk = p.num_kv_heads, G = Hq / Hk;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  // The token the kernel right before may just have written: its sequence's last, which
  // only the sequence's last chunk holds (-1: none here).
  const int fresh = live && item == seq.x + seq.y - 1 ? kv_end - 1 : -1;

  // The K/V loads: thread tid copies 16-byte piece tid % kPieces of rows tid / kPieces +
  // r * kRowsPerPass of a tile. The page numbers of those rows are fetched one tile ahead.
  constexpr int kRowsPerPass = kThreads / C::kPieces;
  constexpr int kPasses = kTile / kRowsPerPass;
  const int piece = tid % C::kPieces, row0 = tid / C::kPieces;
  const T* k_cache = static_cast<const T*>(p.k_cache);
  const T* v_cache = static_cast<const T*>(p.v_cache);
  auto fetch_pages = [&](int32_t(&pg)[kPasses], int start) {
#pragma unroll
    for (int r = 0; r < kPasses; ++r) {
      const int pos = start + row0 + r * kRowsPerPass;
      pg[r] = pos < kv_end ? __ldg(pages + pos / p.page_size) : 0;
    }
  };
  auto row_offset = [&](int32_t page, int pos) {
    const int64_t slot = static_cast<int64_t>(page) * p.page_size + pos % p.page_size;
    return (slot * Hk + hk) * D + piece * 8;
  };
  // Rows past the chunk are zero-filled (a stale row could hold a NaN, and 0 * NaN is NaN
  // in PV); `skip` (the fresh token, loaded after the wait) is left alone.
  auto issue_tile = [&](const int32_t(&pg)[kPasses], int stage, int start, int skip) {
#pragma unroll
    for (int r = 0; r < kPasses; ++r) {
      const int row = row0 + r * kRowsPerPass, pos = start + row;
      if (pos == skip) continue;
      const bool in = pos < kv_end;
      const int64_t offset = in ? row_offset(pg[r], pos) : 0;
      cuda::cp_async16(&sm.k[stage][row][piece * 8], k_cache + offset, in ? 16 : 0);
      cuda::cp_async16(&sm.v[stage][row][piece * 8], v_cache + offset, in ? 16 : 0);
    }
  };
  const int num_tiles = live ? (kv_end - kv_begin + kTile - 1) / kTile : 0;
  int32_t first_pages[C::kStages - 1][kPasses], next_pages[kPasses];
  auto issue_first_tiles = [&](int skip) {
#pragma unroll
    for (int s = 0; s < C::kStages - 1; ++s) fetch_pages(first_pages[s], kv_begin + s * kTile);
    fetch_pages(next_pages, kv_begin + (C::kStages - 1) * kTile);
#pragma unroll
    for (int s = 0; s < C::kStages - 1; ++s) {
      if (s < num_tiles) issue_tile(first_pages[s], s, kv_begin + s * kTile, skip);
      cuda::cp_async_commit();
    }
  };
  if (p.early_kv) issue_first_tiles(fresh);
  // q comes from the kernel right before (rope): read after the wait. No CTA returns
  // before it.
  cuda::pdl_wait();
  cuda::pdl_trigger();
  if (!live) return;
  if (!p.early_kv) {
    issue_first_tiles(-1);
  } else if (fresh >= 0 && fresh < kv_begin + (C::kStages - 1) * kTile && row0 == 0) {
    // The fresh row of an early tile: plain loads now; the loop's barrier publishes them.
    const int rel = fresh - kv_begin, stage = rel / kTile, row = rel % kTile;
    const int64_t offset = row_offset(__ldg(pages + fresh / p.page_size), fresh);
    *reinterpret_cast<uint4*>(&sm.k[stage][row][piece * 8]) = *reinterpret_cast<const uint4*>(k_cache + offset);
    *reinterpret_cast<uint4*>(&sm.v[stage][row][piece * 8]) = *reinterpret_cast<const uint4*>(v_cache + offset);
  }

  // q as A fragments: rows g and g + 8 of the group (zero past G), all loads in flight at once.
  const int g = lane >> 2, qd = lane & 3;
  const bool row_lo = g < G, row_hi = g + 8 < G;
  const T* q = static_cast<const T*>(p.q) + static_cast<int64_t>(b) * p.q_stride_n;
  const T* q_lo = q + static_cast<int64_t>(hk * G + (row_lo ? g : 0)) * p.q_stride_h + 2 * qd;
  const T* q_hi = q + static_cast<int64_t>(hk * G + (row_hi ? g + 8 : 0)) * p.q_stride_h + 2 * qd;
  uint32_t qa[C::kKSteps][4];
#pragma unroll
  for (int s = 0; s < C::kKSteps; ++s) {
    qa[s][0] = row_lo ? load_pair(q_lo + 16 * s) : 0u;
    qa[s][1] = row_hi ? load_pair(q_hi + 16 * s) : 0u;
    qa[s][2] = row_lo ? load_pair(q_lo + 16 * s + 8) : 0u;
    qa[s][3] = row_hi ? load_pair(q_hi + 16 * s + 8) : 0u;
  }
  const float logit_scale = kSoftCap ? p.sm_scale : p.sm_scale * kLog2e;

  // Online softmax state of rows g (index 0) and g + 8 (index 1); l is this lane's part
  // of the sum, reduced over the row's 4 lanes at the end.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
  float o[C::kDimTiles][4];
#pragma unroll
  for (int n = 0; n < C::kDimTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
  const int dims0 = warp * C::kWarpDims;

  for (int t = 0; t < num_tiles; ++t) {
    const int next = t + C::kStages - 1;  // into the stage the previous iteration finished with
    if (next < num_tiles) issue_tile(next_pages, next % C::kStages, kv_begin + next * kTile, -1);
    cuda::cp_async_commit();
    fetch_pages(next_pages, kv_begin + (next + 1) * kTile);  // in flight during this tile's math
    cuda::cp_async_wait<C::kStages - 1>();  // tile t has landed (this thread's copies)
    __syncthreads();                        // ... and everyone's
    const int stage = t % C::kStages;
    const int valid = min(kTile, kv_end - (kv_begin + t * kTile));

    // QK: tokens 8 * warp .. + 7 against the group's rows.
    float sc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int kk = 0; kk < D; kk += 32) {
      uint32_t kb[4];
      cuda::ldmatrix_x4(kb, &sm.k[stage][8 * warp + (lane & 7)][kk + 8 * (lane >> 3)]);
      cuda::mma_16x8x16<T>(sc, qa[kk / 16], kb[0], kb[1]);
      cuda::mma_16x8x16<T>(sc, qa[kk / 16 + 1], kb[2], kb[3]);
    }
    auto logit = [&](float x, int token) {
      x *= logit_scale;
      if constexpr (kSoftCap) x = p.logits_soft_cap * tanhf(x / p.logits_soft_cap) * kLog2e;
      return token < valid ? x : -INFINITY;
    };
    const int tok = 8 * warp + 2 * qd;
    sm.logits[g][tok] = logit(sc[0], tok);
    sm.logits[g][tok + 1] = logit(sc[1], tok + 1);
    sm.logits[g + 8][tok] = logit(sc[2], tok);
    sm.logits[g + 8][tok + 1] = logit(sc[3], tok + 1);
    __syncthreads();

    // Softmax over the tile for rows g and g + 8: this lane's 8 tokens are its A-fragment
    // columns (2qd, 2qd + 1, 8 + 2qd, 9 + 2qd, and those + 16); the row's 4 lanes share the max.
    uint32_t pa[2][4];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float x[8];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const float2 v2 = *reinterpret_cast<const float2*>(&sm.logits[g + 8 * r][8 * j + 2 * qd]);
        x[2 * j] = v2.x;
        x[2 * j + 1] = v2.y;
      }
      float mx = x[0];
#pragma unroll
      for (int j = 1; j < 8; ++j) mx = fmaxf(mx, x[j]);
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      // Rows past the group hold zeros (finite logits), so every row's max is finite.
      const float m_new = fmaxf(m[r], mx);
      const float alpha = exp2f(m[r] - m_new);
      float sum = 0.f;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        x[j] = exp2f(x[j] - m_new);
        sum += x[j];
      }
      l[r] = l[r] * alpha + sum;
      m[r] = m_new;
#pragma unroll
      for (int n = 0; n < C::kDimTiles; ++n) {
        o[n][2 * r] *= alpha;
        o[n][2 * r + 1] *= alpha;
      }
      // A fragment words: k-step s holds columns 16s + {2qd, 8 + 2qd} (x[4s..4s+3]).
#pragma unroll
      for (int s = 0; s < 2; ++s) {
        pa[s][r] = cuda::pack2<T>(x[4 * s], x[4 * s + 1]);
        pa[s][2 + r] = cuda::pack2<T>(x[4 * s + 2], x[4 * s + 3]);
      }
    }

    // PV: this warp's dims, two n-tiles per ldmatrix.x4.trans, two k-steps of 16 tokens.
#pragma unroll
    for (int s = 0; s < 2; ++s) {
#pragma unroll
      for (int n = 0; n < C::kDimTiles; n += 2) {
        uint32_t vb[4];
        cuda::ldmatrix_x4_trans(vb, &sm.v[stage][16 * s + (lane & 7) + 8 * ((lane >> 3) & 1)]
                                         [dims0 + 8 * n + 8 * (lane >> 4)]);
        cuda::mma_16x8x16<T>(o[n], pa[s], vb[0], vb[1]);
        cuda::mma_16x8x16<T>(o[n + 1], pa[s], vb[2], vb[3]);
      }
    }
    __syncthreads();  // the next iteration reloads this stage and rewrites the logits
  }

  // Rows g and g + 8: normalise and store (dims dims0 + 8n + 2qd, + 1 of each n-tile).
  T* out = static_cast<T*>(p.out);
  const bool single = seq.y == 1;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float total = l[r];
    total += __shfl_xor_sync(0xffffffffu, total, 1);
    total += __shfl_xor_sync(0xffffffffu, total, 2);
    const int h = g + 8 * r;
    if (h >= G) continue;
    const float inv = 1.f / total, lse2 = m[r] + log2f(total);
    const int64_t head = hk * G + h;
    if (single) {
      T* row = out + (static_cast<int64_t>(b) * Hq + head) * D + dims0 + 2 * qd;
#pragma unroll
      for (int n = 0; n < C::kDimTiles; ++n)
        *reinterpret_cast<uint32_t*>(row + 8 * n) = cuda::pack2<T>(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
      if (p.lse != nullptr && warp == 0 && qd == 0) p.lse[static_cast<int64_t>(b) * Hq + head] = lse2;
    } else {
      const int64_t prow = static_cast<int64_t>(item) * Hq + head;
      float* part = p.partial_o + prow * D + dims0 + 2 * qd;
#pragma unroll
      for (int n = 0; n < C::kDimTiles; ++n)
        *reinterpret_cast<float2*>(part + 8 * n) = make_float2(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
      if (warp == 0 && qd == 0) p.partial_lse[prow] = lse2;
    }
  }
}

// The merge of a sequence's chunks: one CTA per (sequence, query head). Warp w takes
// chunks w, w + 4, ... with a running max (each lane D / 32 dims, the loads of 8 chunks in
// flight at once: one L2 round trip for a short sequence's chunks); the four warps' states
// are then combined in warp order (deterministic). The kernel before wrote the partials:
// read after pdl_wait(); the schedule is a step input, read before it.
template <int D, class T>
__global__ void __launch_bounds__(kThreads) split_kv_merge_kernel(SplitKvDecodeLaunch p) {
  constexpr int kDpl = D / 32;
  __shared__ float warp_top[kWarps], warp_den[kWarps];
  __shared__ float warp_acc[kWarps][D];
  const int b = blockIdx.x, h = blockIdx.y, tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int Hq = p.num_qo_heads;
  const int2 seq = reinterpret_cast<const int2*>(p.schedule + SplitKvSchedule::kItemsOffset + 4 * p.grid_items)[b];
  cuda::pdl_wait();
  cuda::pdl_trigger();
  const int first = seq.x, chunks = seq.y;
  if (chunks <= 1) return;  // the decode kernel wrote this row itself
  const float* lse = p.partial_lse + static_cast<int64_t>(first) * Hq + h;
  const float* rows = p.partial_o + (static_cast<int64_t>(first) * Hq + h) * D + lane * kDpl;
  const int64_t chunk_stride = static_cast<int64_t>(Hq) * D;
  float top = -INFINITY, den = 0.f, acc[kDpl] = {};
#pragma unroll 8
  for (int c = warp; c < chunks; c += kWarps) {
    const float x = __ldcg(lse + static_cast<int64_t>(c) * Hq);
    float v[kDpl];
#pragma unroll
    for (int e = 0; e < kDpl; e += 2) {
      const float2 pair = __ldcg(reinterpret_cast<const float2*>(rows + c * chunk_stride + e));
      v[e] = pair.x;
      v[e + 1] = pair.y;
    }
    const float next = fmaxf(top, x);  // finite: every partial has a finite lse
    const float rescale = exp2f(top - next), w = exp2f(x - next);
    den = den * rescale + w;
#pragma unroll
    for (int e = 0; e < kDpl; ++e) acc[e] = fmaf(w, v[e], acc[e] * rescale);
    top = next;
  }
#pragma unroll
  for (int e = 0; e < kDpl; ++e) warp_acc[warp][lane * kDpl + e] = acc[e];
  if (lane == 0) warp_top[warp] = top, warp_den[warp] = den;
  __syncthreads();
  // Warps 0 and 1 hold chunks (chunks >= 2), so the maximum is finite; a warp without
  // chunks has top -inf and weight 0.
  const float all_top = fmaxf(fmaxf(warp_top[0], warp_top[1]), fmaxf(warp_top[2], warp_top[3]));
  float scale[kWarps], total = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    scale[w] = exp2f(warp_top[w] - all_top);
    total += warp_den[w] * scale[w];
  }
  T* out = static_cast<T*>(p.out) + (static_cast<int64_t>(b) * Hq + h) * D;
  for (int d = tid; d < D; d += kThreads) {
    float sum = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) sum += warp_acc[w][d] * scale[w];
    out[d] = cuda::from_float<T>(sum / total);
  }
  if (tid == 0 && p.lse != nullptr) p.lse[static_cast<int64_t>(b) * Hq + h] = all_top + log2f(total);
}

// Sets the kernel's shared-memory limit once per device (up to 64 devices), then launches
// the decode kernel and the merge kernel after it.
template <int D, int S, class T, bool kSoftCap>
cudaError_t launch(const SplitKvDecodeLaunch& l, cudaStream_t stream) {
  constexpr size_t kSmem = sizeof(Smem<D, S, T>);
  auto* kernel = split_kv_decode_kernel<D, S, T, kSoftCap>;
  static std::atomic<uint64_t> configured{0};
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess) return e;
  const uint64_t bit = uint64_t{1} << (device & 63);
  if ((configured.load(std::memory_order_acquire) & bit) == 0) {
    if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
        e != cudaSuccess)
      return e;
    configured.fetch_or(bit, std::memory_order_release);
  }
  cuda::launch_pdl(kernel, dim3(static_cast<unsigned>(l.grid_items), static_cast<unsigned>(l.num_kv_heads)),
                   dim3(kThreads), kSmem, stream, l);
  cuda::launch_pdl(split_kv_merge_kernel<D, T>, dim3(static_cast<unsigned>(l.batch), static_cast<unsigned>(l.num_qo_heads)),
                   dim3(kThreads), 0, stream, l);
  return cudaGetLastError();
}

template <int D>
cudaError_t run_any(const SplitKvDecodeLaunch& l, cudaStream_t stream) {
  if (l.num_qo_heads / l.num_kv_heads > kRows) return cudaErrorInvalidValue;  // split_kv_decode_supports_group()
  const bool cap = l.logits_soft_cap > 0;
  constexpr int kDeep = D <= 128 ? 5 : 3;
  if (l.stages == 3 && D <= 128) {
    if (l.dtype == KvDType::bf16)
      return cap ? launch<D, 3, __nv_bfloat16, true>(l, stream) : launch<D, 3, __nv_bfloat16, false>(l, stream);
    return cap ? launch<D, 3, __half, true>(l, stream) : launch<D, 3, __half, false>(l, stream);
  }
  if (l.dtype == KvDType::bf16)
    return cap ? launch<D, kDeep, __nv_bfloat16, true>(l, stream) : launch<D, kDeep, __nv_bfloat16, false>(l, stream);
  return cap ? launch<D, kDeep, __half, true>(l, stream) : launch<D, kDeep, __half, false>(l, stream);
}

}  // namespace fk::ops::attn::split_kv
