// fk's own paged decode attention: split-KV with the merge inside the kernel. Opt-in
// (FK_SPLIT_KV_DECODE=1): correct on every tested shape, but slower than FlashInfer's
// decode on the H100 at every measured one (bench/results/h100/split_kv_decode.json):
//  - short contexts: one CTA merges a sequence's chunks, one L2 round trip per few chunks,
//    after every other CTA's partial has landed (FlashInfer's separate merge kernel
//    spreads that over many CTAs);
//  - long contexts: the CUDA-core QK and PV below run near one instruction per clock per
//    SM, which caps streaming at about 2.3 TB/s. The next step is tensor cores (the GQA
//    group as the rows of an m16n8k16 tile, as FlashInfer's tensor-core decode does) and
//    a merge spread over the CTAs.
// A CTA owns one (chunk, KV head): it streams its chunk's K and V through a cp.async
// pipeline of kStages tiles of kTile tokens, and its 4 warps each own query heads of the
// KV head's group (warp w: heads w, w + 4, ...):
//   QK:  lane j scores token j of the tile against the warp's heads (q in shared memory,
//        scale folded in, base-2 logits);
//   softmax: online, per warp and head (max over the tile by shuffles);
//   PV:  lane owns D / 32 consecutive dims and accumulates p_j * v_j over the tile's tokens.
// A sequence cut into several chunks: each CTA writes its normalised partial row and lse;
// the last CTA of a (sequence, KV head) to finish (an atomic counter) merges the partials
// in chunk order (deterministic) and puts the counter back to zero for the next run.
// The schedule (items, chunks, counters) comes from plan_split_kv (split_kv_schedule.h).
//
// Shapes: q [B, Hq, D] (strided rows), caches [P, page_size, Hk, D], out [B, Hq, D]
// contiguous, lse [B, Hq]; G = Hq / Hk <= 4 * kHeadsPerWarp query heads per KV head.
// Included by split_kv_decode_hd{64,128,256}.cu only.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <atomic>
#include <cmath>

#include "fk/cuda/async_copy.cuh"
#include "fk/cuda/check.h"
#include "fk/cuda/pdl.cuh"
#include "fk/cuda/vec.cuh"
#include "ops/attention/cuda/attention_kernels.h"
#include "ops/attention/split_kv_schedule.h"

namespace fk::ops::attn::split_kv {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTile = 32;  // KV tokens per pipeline stage: one per lane in QK
constexpr float kLog2e = 1.4426950408889634f;

template <int D>
struct Config {
  static constexpr int kStages = D <= 128 ? 3 : 2;  // tiles in flight: 16 KB each at D = 128
  static constexpr int kKRow = D + 8;  // padded K row: lane j reading row j hits 8 distinct 16-byte banks
  static constexpr int kPieces = D / 8;  // 16-byte pieces of a row
  static constexpr int kDimsPerLane = D / 32;
};

template <int D, class T, int kHeadsPerWarp>
struct Smem {
  T k[Config<D>::kStages][kTile][Config<D>::kKRow];
  T v[Config<D>::kStages][kTile][D];
  float q[kWarps * kHeadsPerWarp][D];
  int is_last;
};

template <class T, int kN>
struct alignas(kN * sizeof(T)) Dims {
  T v[kN];
};

template <int D, class T, int kHeadsPerWarp, bool kSoftCap>
__global__ void __launch_bounds__(kThreads) split_kv_decode_kernel(SplitKvDecodeLaunch p) {
  using C = Config<D>;
  constexpr int kDpl = C::kDimsPerLane;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto& sm = *reinterpret_cast<Smem<D, T, kHeadsPerWarp>*>(smem_raw);
  // q and the KV cache come from the kernels before this one, the counters from the last
  // run: nothing is read before the wait, and no CTA returns before it.
  cuda::pdl_wait();
  cuda::pdl_trigger();
  // Global loads here are issued in batches that do not wait for one another: a decode
  // CTA's life is a chain of memory round trips (item -> page numbers -> K/V -> partials),
  // and every extra link in it costs a microsecond at batch 1.
  int32_t* sched = p.schedule;
  const int item = blockIdx.x, hk = blockIdx.y;
  const int num_items = sched[0];
  const int4 it = reinterpret_cast<const int4*>(sched + SplitKvSchedule::kItemsOffset)[item];  // zeros past the items
  if (item >= num_items) return;  // a padding slot of a graph-mode grid
  const int b = it.x, kv_begin = it.y, kv_end = it.z;
  const int32_t* pages = p.kv_indices + it.w;
  const int seqs = SplitKvSchedule::kItemsOffset + 4 * p.grid_items;
  const int2 seq = reinterpret_cast<const int2*>(sched + seqs)[b];  // {first item, chunks}: used at the end
  const int Hq = p.num_qo_heads, Hk = p.num_kv_heads, G = Hq / Hk;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;

  // The K/V loads: thread tid copies 16-byte piece tid % kPieces of rows tid / kPieces +
  // r * kRowsPerPass of a tile. The page numbers of those rows are fetched one tile ahead.
  constexpr int kRowsPerPass = kThreads / C::kPieces;
  constexpr int kPasses = kTile / kRowsPerPass;
  const int piece = tid % C::kPieces, row0 = tid / C::kPieces;
  auto fetch_pages = [&](int32_t(&pg)[kPasses], int start) {
#pragma unroll
    for (int r = 0; r < kPasses; ++r) {
      const int pos = start + row0 + r * kRowsPerPass;
      pg[r] = pos < kv_end ? __ldg(pages + pos / p.page_size) : 0;
    }
  };
  const T* k_cache = static_cast<const T*>(p.k_cache);
  const T* v_cache = static_cast<const T*>(p.v_cache);
  auto issue_tile = [&](const int32_t(&pg)[kPasses], int stage, int start) {
#pragma unroll
    for (int r = 0; r < kPasses; ++r) {
      const int row = row0 + r * kRowsPerPass, pos = start + row;
      if (pos < kv_end) {  // rows past the chunk stay stale: masked in QK, skipped in PV
        const int64_t slot = static_cast<int64_t>(pg[r]) * p.page_size + pos % p.page_size;
        const int64_t offset = (slot * Hk + hk) * D + piece * 8;
        cuda::cp_async16(&sm.k[stage][row][piece * 8], k_cache + offset);
        cuda::cp_async16(&sm.v[stage][row][piece * 8], v_cache + offset);
      }
    }
  };
  const int num_tiles = (kv_end - kv_begin + kTile - 1) / kTile;
  int32_t first_pages[C::kStages - 1][kPasses], next_pages[kPasses];
#pragma unroll
  for (int s = 0; s < C::kStages - 1; ++s) fetch_pages(first_pages[s], kv_begin + s * kTile);
  fetch_pages(next_pages, kv_begin + (C::kStages - 1) * kTile);

  // This KV head's query rows, as floats with the logit scale (and, without soft-cap, the
  // change to base 2) folded in; rows past the group are zero. 16-byte loads, all issued
  // before any is used.
  const float q_scale = kSoftCap ? p.sm_scale : p.sm_scale * kLog2e;
  const T* q = static_cast<const T*>(p.q) + static_cast<int64_t>(b) * p.q_stride_n;
  constexpr int kQPieces = kWarps * kHeadsPerWarp * C::kPieces;
  constexpr int kQRounds = (kQPieces + kThreads - 1) / kThreads;
  cuda::Vec16<T> q_piece[kQRounds];
#pragma unroll
  for (int r = 0; r < kQRounds; ++r) {
    const int v = tid + r * kThreads, h = v / C::kPieces;
    if (v < kQPieces && h < G)
      q_piece[r] = cuda::load16(q + static_cast<int64_t>(hk * G + h) * p.q_stride_h + (v % C::kPieces) * 8);
  }

#pragma unroll
  for (int s = 0; s < C::kStages - 1; ++s) {
    if (s < num_tiles) issue_tile(first_pages[s], s, kv_begin + s * kTile);
    cuda::cp_async_commit();
  }
#pragma unroll
  for (int r = 0; r < kQRounds; ++r) {
    const int v = tid + r * kThreads, h = v / C::kPieces;
    if (v >= kQPieces) break;
    float* dst = &sm.q[h][(v % C::kPieces) * 8];
#pragma unroll
    for (int e = 0; e < 8; ++e) dst[e] = h < G ? cuda::to_float(q_piece[r].v[e]) * q_scale : 0.f;
  }

  const bool warp_has_heads = warp < G;
  float m[kHeadsPerWarp], l[kHeadsPerWarp], o[kHeadsPerWarp][kDpl];
#pragma unroll
  for (int i = 0; i < kHeadsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.f;  // this lane's part of the sum of exponentials; the warp sum comes once, at the end
#pragma unroll
    for (int e = 0; e < kDpl; ++e) o[i][e] = 0.f;
  }

  for (int t = 0; t < num_tiles; ++t) {
    const int next = t + C::kStages - 1;  // into the stage the previous iteration finished with
    if (next < num_tiles) issue_tile(next_pages, next % C::kStages, kv_begin + next * kTile);
    cuda::cp_async_commit();
    fetch_pages(next_pages, kv_begin + (next + 1) * kTile);  // in flight during this tile's math
    cuda::cp_async_wait<C::kStages - 1>();  // tile t has landed (this thread's copies)
    __syncthreads();                        // ... and everyone's, and q
    const int stage = t % C::kStages;
    const int valid = min(kTile, kv_end - (kv_begin + t * kTile));
    if (warp_has_heads) {
      float s[kHeadsPerWarp] = {};
      const T* k_row = sm.k[stage][lane];
#pragma unroll
      for (int d = 0; d < D; d += 8) {
        const auto kv = *reinterpret_cast<const cuda::Vec16<T>*>(k_row + d);
        float kf[8];
#pragma unroll
        for (int e = 0; e < 8; ++e) kf[e] = cuda::to_float(kv.v[e]);
#pragma unroll
        for (int i = 0; i < kHeadsPerWarp; ++i) {
          const float4 qa = *reinterpret_cast<const float4*>(&sm.q[warp + kWarps * i][d]);
          const float4 qb = *reinterpret_cast<const float4*>(&sm.q[warp + kWarps * i][d + 4]);
          s[i] += qa.x * kf[0] + qa.y * kf[1] + qa.z * kf[2] + qa.w * kf[3] + qb.x * kf[4] + qb.y * kf[5] +
                  qb.z * kf[6] + qb.w * kf[7];
        }
      }
      float prob[kHeadsPerWarp];
#pragma unroll
      for (int i = 0; i < kHeadsPerWarp; ++i) {
        float x = s[i];
        if constexpr (kSoftCap) x = p.logits_soft_cap * tanhf(x / p.logits_soft_cap) * kLog2e;
        x = lane < valid ? x : -INFINITY;
        const float m_new = fmaxf(m[i], cuda::warp_max(x));  // finite: the tile has a valid token
        const float alpha = exp2f(m[i] - m_new);
        prob[i] = exp2f(x - m_new);
        l[i] = l[i] * alpha + prob[i];
#pragma unroll
        for (int e = 0; e < kDpl; ++e) o[i][e] *= alpha;
        m[i] = m_new;
      }
#pragma unroll 8
      for (int j = 0; j < valid; ++j) {
        const auto vv = *reinterpret_cast<const Dims<T, kDpl>*>(&sm.v[stage][j][lane * kDpl]);
#pragma unroll
        for (int i = 0; i < kHeadsPerWarp; ++i) {
          const float pj = __shfl_sync(0xffffffffu, prob[i], j);
#pragma unroll
          for (int e = 0; e < kDpl; ++e) o[i][e] += pj * cuda::to_float(vv.v[e]);
        }
      }
    }
    __syncthreads();  // the next iteration reloads this stage
  }

  T* out = static_cast<T*>(p.out);
  const int first_item = seq.x, num_chunks = seq.y;
  const bool single = num_chunks == 1;
  if (warp_has_heads) {
#pragma unroll
    for (int i = 0; i < kHeadsPerWarp; ++i) {
      const int h = warp + kWarps * i;
      if (h >= G) break;  // warp-uniform
      const float total = cuda::warp_sum(l[i]);
      const float inv = 1.f / total, lse2 = m[i] + log2f(total);
      if (single) {
        T* row = out + (static_cast<int64_t>(b) * Hq + hk * G + h) * D + lane * kDpl;
#pragma unroll
        for (int e = 0; e < kDpl; ++e) row[e] = cuda::from_float<T>(o[i][e] * inv);
        if (p.lse != nullptr && lane == 0) p.lse[static_cast<int64_t>(b) * Hq + hk * G + h] = lse2;
      } else {
        const int64_t prow = (static_cast<int64_t>(item) * Hk + hk) * G + h;
        float* part = p.partial_o + prow * D + lane * kDpl;
#pragma unroll
        for (int e = 0; e < kDpl; ++e) part[e] = o[i][e] * inv;
        if (lane == 0) p.partial_lse[prow] = lse2;
      }
    }
  }
  if (single) return;

  // The last CTA of this (sequence, KV head) merges: release this CTA's partials, count it.
  __threadfence();
  __syncthreads();
  int32_t* counter = sched + seqs + 2 * p.batch + b * Hk + hk;
  if (tid == 0) sm.is_last = atomicAdd(counter, 1) == num_chunks - 1;
  __syncthreads();
  if (!sm.is_last) return;
  __threadfence();  // acquire: the other CTAs' partials (read past L1)
  // One pass in chunk order with a running max; warp w merges heads w, w + 4, ... together
  // and the chunk loop is unrolled, so many partial loads are in flight at once (a loop
  // that waited for each chunk's loads cost one L2 round trip per chunk).
  float top[kHeadsPerWarp], den[kHeadsPerWarp], acc[kHeadsPerWarp][kDpl];
#pragma unroll
  for (int i = 0; i < kHeadsPerWarp; ++i) {
    top[i] = -INFINITY;
    den[i] = 0.f;
#pragma unroll
    for (int e = 0; e < kDpl; ++e) acc[i][e] = 0.f;
  }
#pragma unroll 4
  for (int c = 0; c < num_chunks; ++c) {
#pragma unroll
    for (int i = 0; i < kHeadsPerWarp; ++i) {
      const int h = min(warp + kWarps * i, G - 1);  // past the group: a duplicate, not written
      const int64_t row = (static_cast<int64_t>(first_item + c) * Hk + hk) * G + h;
      const float lse = __ldcg(p.partial_lse + row);
      float v[kDpl];
#pragma unroll
      for (int e = 0; e < kDpl; ++e) v[e] = __ldcg(p.partial_o + row * D + lane * kDpl + e);
      const float next = fmaxf(top[i], lse);  // finite: every partial has a finite lse
      const float rescale = exp2f(top[i] - next), w = exp2f(lse - next);
      den[i] = den[i] * rescale + w;
#pragma unroll
      for (int e = 0; e < kDpl; ++e) acc[i][e] = acc[i][e] * rescale + w * v[e];
      top[i] = next;
    }
  }
#pragma unroll
  for (int i = 0; i < kHeadsPerWarp; ++i) {
    const int h = warp + kWarps * i;
    if (h >= G) break;
    T* row = out + (static_cast<int64_t>(b) * Hq + hk * G + h) * D + lane * kDpl;
#pragma unroll
    for (int e = 0; e < kDpl; ++e) row[e] = cuda::from_float<T>(acc[i][e] / den[i]);
    if (p.lse != nullptr && lane == 0) p.lse[static_cast<int64_t>(b) * Hq + hk * G + h] = top[i] + log2f(den[i]);
  }
  if (tid == 0) *counter = 0;  // ready for the next run of this plan
}

// Sets the kernel's shared-memory limit once per device (up to 64 devices), then launches.
template <int D, class T, int kHeadsPerWarp, bool kSoftCap>
cudaError_t launch(const SplitKvDecodeLaunch& l, cudaStream_t stream) {
  constexpr size_t kSmem = sizeof(Smem<D, T, kHeadsPerWarp>);
  auto* kernel = split_kv_decode_kernel<D, T, kHeadsPerWarp, kSoftCap>;
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
  return cudaGetLastError();
}

template <int D, class T, int kHeadsPerWarp>
cudaError_t launch_cap(const SplitKvDecodeLaunch& l, cudaStream_t stream) {
  return l.logits_soft_cap > 0 ? launch<D, T, kHeadsPerWarp, true>(l, stream)
                               : launch<D, T, kHeadsPerWarp, false>(l, stream);
}

template <int D, class T>
cudaError_t launch_group(const SplitKvDecodeLaunch& l, cudaStream_t stream) {
  const int group = l.num_qo_heads / l.num_kv_heads;
  if (group <= kWarps) return launch_cap<D, T, 1>(l, stream);
  if (group <= 2 * kWarps) return launch_cap<D, T, 2>(l, stream);
  if (group <= 4 * kWarps) return launch_cap<D, T, 4>(l, stream);
  return cudaErrorInvalidValue;  // split_kv_decode_supports_group() keeps these away
}

template <int D>
cudaError_t run_any(const SplitKvDecodeLaunch& l, cudaStream_t stream) {
  return l.dtype == KvDType::bf16 ? launch_group<D, __nv_bfloat16>(l, stream) : launch_group<D, __half>(l, stream);
}

}  // namespace fk::ops::attn::split_kv
