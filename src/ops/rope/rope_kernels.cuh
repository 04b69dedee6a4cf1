// Device code of the rotary_embedding, qk_norm_rope and rope_and_cache CUDA baselines (one
// kernel family: qk_norm_rope is rotary_embedding with a per-head RMSNorm in front, and
// kCache adds the paged KV-cache write of rope_and_cache: the rotated key heads go to the
// cache from the registers that rotated them, and the value heads are one more class of
// heads, loaded and stored to the cache unchanged).
//
// Vector kernel. A head is split into 16-byte slots of N = 16 / sizeof(T) elements:
//   neox: pair slot s holds elements [sN, sN+N) and [rot/2 + sN, rot/2 + sN + N): both
//         halves of N rotary pairs, so every pair is complete in one thread;
//   gptj: pair slot s holds elements [sN, sN+N): N/2 interleaved pairs;
//   tail: slots holding the dims [rot_dim, D), which are normalised (kNorm) but not
//         rotated; with kCache they exist without the norm too, because the cache takes
//         whole heads.
// A group of G lanes (a power of two <= 32) owns the slots of one head; lane l takes slots
// l, l+G, ... (kSlots of them at most). Its cos/sin values depend on the slot and the
// token only, so a lane loads them once and reuses them for every head it visits: a block
// row covers one token with HL groups walking the token's Hq + Hk heads (q first, then
// k, then v with kCache); blockDim.y tokens per block. With few tokens, gridDim.y blocks
// split a token's heads (block y takes heads y*HL .. y*HL + HL - 1, then every
// gridDim.y*HL-th), so no group walks more than one head. The norm's sum of squares is a shuffle reduction
// inside the group.
//
// Scalar kernel: one block per token, one warp per head, any shape and alignment.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "fk/cuda/pdl.cuh"
#include "fk/cuda/vec.cuh"
#include "fk/ops/rope.h"

namespace fk::ops::rope_cuda {

using cuda::from_float;
using cuda::to_float;
using cuda::Vec16;

struct KernelParams {
  void* q = nullptr;
  int64_t q_token_stride = 0, q_head_stride = 0;
  int q_heads = 0;
  void* k = nullptr;
  int64_t k_token_stride = 0, k_head_stride = 0;
  int k_heads = 0;
  const void* q_weight = nullptr;  // qk_norm_rope only
  const void* k_weight = nullptr;
  const void* positions = nullptr;
  int64_t pos_stride = 0;
  int pos_is_i64 = 1;
  const void* cache = nullptr;
  int64_t max_pos = 0;
  int rot_dim = 0;
  int head_size = 0;
  float eps = 0;
  int64_t tokens = 0;
  // rope_and_cache only: value heads and the paged caches [P, S, Hk, D] (pages contiguous).
  const void* v = nullptr;
  int64_t v_token_stride = 0, v_head_stride = 0;
  void* k_cache = nullptr;
  void* v_cache = nullptr;
  int64_t k_page_stride = 0, v_page_stride = 0, page_size = 0, num_slots = 0;
  const long long* slot_mapping = nullptr;
  int early_reads = 1;  // positions, cos/sin rows, slots and norm weights read before pdl_wait()
};

// Vector-kernel launch geometry (see the top of this file).
struct VecGeometry {
  int group_lanes = 0;  // G
  int head_lanes = 0;   // HL
};

__device__ __forceinline__ int64_t load_position(const KernelParams& p, int64_t t) {
  return p.pos_is_i64 ? __ldg(static_cast<const long long*>(p.positions) + t * p.pos_stride)
                      : static_cast<int64_t>(__ldg(static_cast<const int*>(p.positions) + t * p.pos_stride));
}

// q and k are read and written by the same thread: plain loads, not the read-only path.
template <class T>
__device__ __forceinline__ void load_vec(const T* p, float (&out)[Vec16<T>::N]) {
  Vec16<T> v;
  *reinterpret_cast<uint4*>(&v) = *reinterpret_cast<const uint4*>(p);
#pragma unroll
  for (int i = 0; i < Vec16<T>::N; ++i) out[i] = to_float(v.v[i]);
}
template <class T>
__device__ __forceinline__ void store_vec(T* p, const float (&in)[Vec16<T>::N]) {
  Vec16<T> v;
#pragma unroll
  for (int i = 0; i < Vec16<T>::N; ++i) v.v[i] = from_float<T>(in[i]);
  *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(&v);
}

// K consecutive cache values (K * sizeof(C) is 8, 16 or 32 bytes, naturally aligned).
template <class C, int K>
__device__ __forceinline__ void load_cache(const C* p, float (&out)[K]) {
  constexpr int kBytes = K * static_cast<int>(sizeof(C));
  static_assert(kBytes == 8 || kBytes % 16 == 0, "cache chunk must be 8 or a multiple of 16 bytes");
  alignas(16) C tmp[K];
  if constexpr (kBytes == 8) {
    *reinterpret_cast<uint2*>(tmp) = __ldg(reinterpret_cast<const uint2*>(p));
  } else {
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i)
      reinterpret_cast<uint4*>(tmp)[i] = __ldg(reinterpret_cast<const uint4*>(p) + i);
  }
#pragma unroll
  for (int i = 0; i < K; ++i) out[i] = to_float(tmp[i]);
}

// Sum over the aligned group of `group_lanes` lanes this lane belongs to.
__device__ __forceinline__ float group_sum(float v, int group_lanes) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned mask =
      group_lanes == 32 ? 0xffffffffu : ((1u << group_lanes) - 1u) << (lane & ~static_cast<unsigned>(group_lanes - 1));
  for (int o = group_lanes / 2; o > 0; o >>= 1) v += __shfl_xor_sync(mask, v, o);
  return v;
}

// Element offset of token t's row (all its KV heads) in a cache page, or -1 when the token
// has no slot (negative) or one outside the cache (dropped: the baseline cannot report it).
__device__ __forceinline__ int64_t cache_row(const KernelParams& p, int64_t t, int64_t page_stride) {
  const int64_t slot = p.slot_mapping[t];
  if (slot < 0 || slot >= p.num_slots) return -1;
  return slot / p.page_size * page_stride + slot % p.page_size * p.k_heads * p.head_size;
}

template <class T, class C, RopeStyle kStyle, bool kNorm, bool kCache, int kSlots>
__global__ void __launch_bounds__(256) rope_vec_kernel(KernelParams p, VecGeometry g) {
  constexpr int N = Vec16<T>::N;
  constexpr bool kTail = kNorm || kCache;
  constexpr int K = kStyle == RopeStyle::neox ? N : N / 2;  // pairs (cos values) per slot
  // Launched with PDL (rope_launch.cuh): q, k and v come from the kernel before, and are
  // read after pdl_wait(). The position, its cos/sin row, the slot and the norm weights
  // are read before it (unless the op's variant late_reads): they are step inputs or constants, never
  // written by the kernel right before this one (fk/ops/rope.h), and dependent loads come
  // off a decode layer's critical path: Qwen3-30B-A3B batch 1 3.056 -> 2.99 ms a step on
  // an H100 (bench/results/h100/rope_early_reads.json). Every CTA still waits before it
  // returns.
  const int64_t t_raw = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  const bool early = p.early_reads;
  if (!early) {
    cuda::pdl_wait();
    cuda::pdl_trigger();
  }
  // Rows past the end load token T - 1's inputs and return after the wait, storing nothing.
  const int64_t t = t_raw < p.tokens ? t_raw : p.tokens - 1;
  // No early return on a bad position: that branch would hold every q/k load back until
  // the position arrives. Bad positions read cache row 0 and skip the stores instead
  // (memory-safe; the token is left as is).
  const int64_t pos = load_position(p, t);
  const bool valid = pos >= 0 && pos < p.max_pos;
  int64_t k_row = -1, v_row = -1;
  if constexpr (kCache) {
    k_row = cache_row(p, t, p.k_page_stride);
    v_row = k_row < 0 ? -1 : cache_row(p, t, p.v_page_stride);
  }

  const int lane = static_cast<int>(threadIdx.x) % g.group_lanes;
  const int head_lane = static_cast<int>(threadIdx.x) / g.group_lanes;
  const int half = p.rot_dim / 2;
  const int pair_slots = kStyle == RopeStyle::neox ? half / N : p.rot_dim / N;
  const int slots = pair_slots + (kTail ? (p.head_size - p.rot_dim) / N : 0);

  // Element offsets of each slot's first (a) and, for neox pairs, second (b) vector: the
  // same in every head.
  int off_a[kSlots], off_b[kSlots];
#pragma unroll
  for (int j = 0; j < kSlots; ++j) {
    const int s = lane + j * g.group_lanes;
    off_a[j] = s < pair_slots ? s * N : p.rot_dim + (s - pair_slots) * N;
    off_b[j] = half + s * N;
  }

  const C* row = static_cast<const C*>(p.cache) + (valid ? pos : 0) * p.rot_dim;
  float cos_v[kSlots][K], sin_v[kSlots][K];
#pragma unroll
  for (int j = 0; j < kSlots; ++j) {
    const int s = lane + j * g.group_lanes;
    if (s < pair_slots) {
      load_cache<C, K>(row + s * K, cos_v[j]);
      load_cache<C, K>(row + half + s * K, sin_v[j]);
    }
  }
  // The norm weights, model constants, are loaded with them (both q's and k's: a lane may
  // visit heads of either kind).
  Vec16<T> wq_a[kSlots], wq_b[kSlots], wk_a[kSlots], wk_b[kSlots];
  if constexpr (kNorm) {
    const T* wq = static_cast<const T*>(p.q_weight);
    const T* wk = static_cast<const T*>(p.k_weight);
#pragma unroll
    for (int j = 0; j < kSlots; ++j) {
      const int s = lane + j * g.group_lanes;
      if (s < slots) {
        wq_a[j] = cuda::load16(wq + off_a[j]);
        wk_a[j] = cuda::load16(wk + off_a[j]);
      }
      if (kStyle == RopeStyle::neox && s < pair_slots) {
        wq_b[j] = cuda::load16(wq + off_b[j]);
        wk_b[j] = cuda::load16(wk + off_b[j]);
      }
    }
  }

  if (early) {
    cuda::pdl_wait();
    cuda::pdl_trigger();
  }
  if (t_raw >= p.tokens) return;  // whole warps: a warp lies within one block row
  const int num_heads = p.q_heads + p.k_heads * (kCache ? 2 : 1);
  // blockIdx.y splits a token's heads over blocks (few tokens: see launch_vec).
  for (int h = static_cast<int>(blockIdx.y) * g.head_lanes + head_lane; h < num_heads;
       h += static_cast<int>(gridDim.y) * g.head_lanes) {
    const bool is_q = h < p.q_heads;
    const bool is_v = kCache && h >= p.q_heads + p.k_heads;
    const int kv_head = is_v ? h - p.q_heads - p.k_heads : h - p.q_heads;
    T* x = is_q   ? static_cast<T*>(p.q) + t * p.q_token_stride + h * p.q_head_stride
           : is_v ? const_cast<T*>(static_cast<const T*>(p.v)) + t * p.v_token_stride + kv_head * p.v_head_stride
                  : static_cast<T*>(p.k) + t * p.k_token_stride + kv_head * p.k_head_stride;
    float a[kSlots][N], b[kSlots][N];
#pragma unroll
    for (int j = 0; j < kSlots; ++j) {
      const int s = lane + j * g.group_lanes;
      if (s < pair_slots || (kTail && s < slots)) load_vec(x + off_a[j], a[j]);
      if (kStyle == RopeStyle::neox && s < pair_slots) load_vec(x + off_b[j], b[j]);
    }

    if constexpr (kCache) {
      if (is_v) {  // unchanged into the cache; a token with a bad position writes nothing
        if (!valid || v_row < 0) continue;
        T* dst = static_cast<T*>(p.v_cache) + v_row + static_cast<int64_t>(kv_head) * p.head_size;
#pragma unroll
        for (int j = 0; j < kSlots; ++j) {
          const int s = lane + j * g.group_lanes;
          if (s < slots) store_vec(dst + off_a[j], a[j]);
          if (kStyle == RopeStyle::neox && s < pair_slots) store_vec(dst + off_b[j], b[j]);
        }
        continue;
      }
    }

    if constexpr (kNorm) {
      float sum_sq = 0.f;
#pragma unroll
      for (int j = 0; j < kSlots; ++j) {
        const int s = lane + j * g.group_lanes;
        if (s < slots) {
#pragma unroll
          for (int i = 0; i < N; ++i) sum_sq += a[j][i] * a[j][i];
        }
        if (kStyle == RopeStyle::neox && s < pair_slots) {
#pragma unroll
          for (int i = 0; i < N; ++i) sum_sq += b[j][i] * b[j][i];
        }
      }
      const float inv_rms = rsqrtf(group_sum(sum_sq, g.group_lanes) / static_cast<float>(p.head_size) + p.eps);
#pragma unroll
      for (int j = 0; j < kSlots; ++j) {
        const int s = lane + j * g.group_lanes;
        if (s < slots) {
          const Vec16<T>& wv = is_q ? wq_a[j] : wk_a[j];
#pragma unroll
          for (int i = 0; i < N; ++i) a[j][i] *= inv_rms * to_float(wv.v[i]);
        }
        if (kStyle == RopeStyle::neox && s < pair_slots) {
          const Vec16<T>& wv = is_q ? wq_b[j] : wk_b[j];
#pragma unroll
          for (int i = 0; i < N; ++i) b[j][i] *= inv_rms * to_float(wv.v[i]);
        }
      }
    }

    if (!valid) continue;
    // The rotated key head's copy in the cache (null: a query head, or no slot).
    T* cache_dst = kCache && !is_q && k_row >= 0
                       ? static_cast<T*>(p.k_cache) + k_row + static_cast<int64_t>(kv_head) * p.head_size
                       : nullptr;
#pragma unroll
    for (int j = 0; j < kSlots; ++j) {
      const int s = lane + j * g.group_lanes;
      if (s < pair_slots) {
        if constexpr (kStyle == RopeStyle::neox) {
#pragma unroll
          for (int i = 0; i < N; ++i) {
            const float x1 = a[j][i], x2 = b[j][i];
            a[j][i] = x1 * cos_v[j][i] - x2 * sin_v[j][i];
            b[j][i] = x2 * cos_v[j][i] + x1 * sin_v[j][i];
          }
          store_vec(x + off_a[j], a[j]);
          store_vec(x + off_b[j], b[j]);
          if (kCache && cache_dst) {
            store_vec(cache_dst + off_a[j], a[j]);
            store_vec(cache_dst + off_b[j], b[j]);
          }
        } else {
#pragma unroll
          for (int i = 0; i < K; ++i) {
            const float x1 = a[j][2 * i], x2 = a[j][2 * i + 1];
            a[j][2 * i] = x1 * cos_v[j][i] - x2 * sin_v[j][i];
            a[j][2 * i + 1] = x2 * cos_v[j][i] + x1 * sin_v[j][i];
          }
          store_vec(x + off_a[j], a[j]);
          if (kCache && cache_dst) store_vec(cache_dst + off_a[j], a[j]);
        }
      } else if (kTail && s < slots) {
        if (kNorm) store_vec(x + off_a[j], a[j]);  // tail: normalised, not rotated
        if (kCache && cache_dst) store_vec(cache_dst + off_a[j], a[j]);
      }
    }
  }
}

// Any shape, any alignment: one block per token, one warp per head; with kCache the
// block then copies the token's rotated key heads and its value heads to the cache.
template <class T, class C, bool kNorm, bool kCache>
__global__ void __launch_bounds__(128) rope_scalar_kernel(KernelParams p, RopeStyle style) {
  cuda::pdl_wait();
  cuda::pdl_trigger();
  const int64_t t = blockIdx.x;
  const int64_t pos = load_position(p, t);
  if (pos < 0 || pos >= p.max_pos) return;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int num_warps = static_cast<int>(blockDim.x) >> 5;
  const int half = p.rot_dim / 2;
  const C* row = static_cast<const C*>(p.cache) + pos * p.rot_dim;
  const int num_heads = p.q_heads + p.k_heads;
  for (int h = warp; h < num_heads; h += num_warps) {
    const bool is_q = h < p.q_heads;
    T* x = is_q ? static_cast<T*>(p.q) + t * p.q_token_stride + h * p.q_head_stride
                : static_cast<T*>(p.k) + t * p.k_token_stride + (h - p.q_heads) * p.k_head_stride;
    const T* w = static_cast<const T*>(is_q ? p.q_weight : p.k_weight);
    float inv_rms = 1.f;
    if constexpr (kNorm) {
      float sum_sq = 0.f;
      for (int d = lane; d < p.head_size; d += 32) {
        const float v = to_float(x[d]);
        sum_sq += v * v;
      }
      // The whole head is read (into sum_sq) before any lane writes: the shuffles order it.
      inv_rms = rsqrtf(cuda::warp_sum(sum_sq) / static_cast<float>(p.head_size) + p.eps);
    }
    for (int i = lane; i < half; i += 32) {
      const int i1 = style == RopeStyle::neox ? i : 2 * i;
      const int i2 = style == RopeStyle::neox ? i + half : 2 * i + 1;
      float x1 = to_float(x[i1]), x2 = to_float(x[i2]);
      if constexpr (kNorm) {
        x1 *= inv_rms * to_float(w[i1]);
        x2 *= inv_rms * to_float(w[i2]);
      }
      const float c = to_float(row[i]), s = to_float(row[half + i]);
      x[i1] = from_float<T>(x1 * c - x2 * s);
      x[i2] = from_float<T>(x2 * c + x1 * s);
    }
    if constexpr (kNorm) {
      for (int d = p.rot_dim + lane; d < p.head_size; d += 32) x[d] = from_float<T>(to_float(x[d]) * inv_rms * to_float(w[d]));
    }
  }
  if constexpr (kCache) {
    const int64_t k_row = cache_row(p, t, p.k_page_stride), v_row = cache_row(p, t, p.v_page_stride);
    if (k_row < 0) return;  // the whole block: no __syncthreads below is skipped by part of it
    __syncthreads();  // the rotated key heads, written by other warps, are visible to the block
    const int64_t D = p.head_size, n = static_cast<int64_t>(p.k_heads) * D;
    const T* k = static_cast<const T*>(p.k) + t * p.k_token_stride;
    const T* v = static_cast<const T*>(p.v) + t * p.v_token_stride;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
      const int64_t h = i / D, d = i % D;
      static_cast<T*>(p.k_cache)[k_row + i] = k[h * p.k_head_stride + d];
      static_cast<T*>(p.v_cache)[v_row + i] = v[h * p.v_head_stride + d];
    }
  }
}

}  // namespace fk::ops::rope_cuda
