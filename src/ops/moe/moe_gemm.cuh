// The fused-experts grouped GEMM (index math: moe_gemm_layout.h). One kernel template
// serves both GEMMs of an expert MLP:
//   gate_up  intermediate[p, :] = silu(hidden[token(p)] @ w13[e, :I]^T) * (hidden[token(p)] @ w13[e, I:]^T)
//   down     y[slot(p), :]      = topk_weight(slot(p)) * intermediate[p, :] @ w2[e]^T
// for the sorted positions p of one block of moe_align_block_size (all of expert e).
// Tensor cores through mma.sync m16n8k16 (bf16 or f16, fp32 accumulate), operands staged
// by a cp.async multi-stage pipeline and read with ldmatrix. fp8 weights (block-scaled
// e4m3) are copied as bytes and dequantised to the activation type while building the
// B fragments.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "fk/cuda/async_copy.cuh"

#include "ops/moe/moe_gemm_layout.h"

namespace fk::ops::moe_gemm {

struct GemmParams {
  const void* a;          // gate_up: hidden [T, lda]; down: intermediate [rows, K] (lda = K)
  int64_t lda;            // elements between rows of a
  const void* w;          // [E, w_rows, K]: w13 (w_rows = 2I) or w2 (w_rows = H)
  const float* w_scale;   // fp8: [E, ceil(w_rows / 128), ceil(K / 128)]; else null
  int64_t w_rows;
  int64_t K;              // H (gate_up) or I (down)
  int64_t n_size;         // output columns: I (gate_up) or H (down)
  void* c;                // gate_up: intermediate [rows, I]; down: y [N, H]
  const int32_t* sorted_ids;       // moe_align_block_size outputs with block_size = bm
  const int32_t* expert_ids;
  const int32_t* num_post_padded;
  const float* topk_weights;       // [N] (down)
  int32_t num_slots;               // N, the sentinel
  int32_t top_k;
};

template <class Act>
struct ActTraits;
template <>
struct ActTraits<__nv_bfloat16> {
  __device__ static uint32_t pack(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
  __device__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};
template <>
struct ActTraits<__half> {
  __device__ static uint32_t pack(float lo, float hi) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
  __device__ static void mma(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

using cuda::cp_async16;
using cuda::cp_async_commit;
using cuda::cp_async_wait;
using cuda::smem_addr;

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

// Two e4m3 values (low byte first) times `scale`, as a packed pair of Act.
template <class Act>
__device__ __forceinline__ uint32_t dequant_fp8x2(uint16_t v, float scale) {
  const __half2_raw raw = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v), __NV_E4M3);
  const float2 f = __half22float2(__half2(raw));
  return ActTraits<Act>::pack(f.x * scale, f.y * scale);
}

__device__ __forceinline__ float silu(float x) { return x / (1.0f + __expf(-x)); }

// Cfg::kTile: the Tile; kKind: which GEMM; Act: bf16 / f16; kFp8: e4m3 weights.
template <class Cfg, Kind kKind, class Act, bool kFp8>
__global__ void __launch_bounds__(Cfg::kTile.threads()) moe_gemm_kernel(const GemmParams p) {
  constexpr Tile t = Cfg::kTile;
  constexpr int kWB = kFp8 ? 1 : 2;  // bytes per weight
  constexpr int kThreads = t.threads();
  constexpr int kACpr = t.a_chunks_per_row(), kBCpr = t.b_chunks_per_row(kWB);
  constexpr int kAChunks = t.bm * kACpr / kThreads, kBChunks = t.bn_rows() * kBCpr / kThreads;
  static_assert(t.bm * kACpr % kThreads == 0 && t.bn_rows() * kBCpr % kThreads == 0, "copies split evenly");
  static_assert(t.bk % 16 == 0 && kScaleBlock % t.bk == 0, "k tiles lie within one fp8 scale block");
  static_assert(t.nt % 2 == 0, "B fragments are loaded in pairs; gate_up pairs gate and up tiles");
  constexpr int kElemsPerBChunk = 16 / kWB;

  extern __shared__ __align__(16) unsigned char smem[];
  unsigned char* a_smem = smem;
  unsigned char* b_smem = smem + t.stages * t.a_stage_bytes();
  int32_t* slot_ids = reinterpret_cast<int32_t*>(b_smem + t.stages * t.b_stage_bytes(kWB));

  const int n_tile = blockIdx.x, m_block = blockIdx.y;
  const int total = *p.num_post_padded;
  if (m_block * t.bm >= total) return;
  const int e = p.expert_ids[m_block];
  if (e < 0) return;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int warp_m = warp / t.warps_n, warp_n = warp % t.warps_n;
  for (int r = tid; r < t.bm; r += kThreads) slot_ids[r] = p.sorted_ids[m_block * t.bm + r];
  __syncthreads();

  // This thread's 16-byte copies: the same rows every k tile, so row addresses are fixed.
  const unsigned char* a_src[kAChunks];
  bool a_ok[kAChunks];
#pragma unroll
  for (int i = 0; i < kAChunks; ++i) {
    const int row = (tid + i * kThreads) / kACpr;
    const int s = slot_ids[row];
    a_ok[i] = s < p.num_slots;
    int64_t a_row;
    if constexpr (kKind == Kind::gate_up) a_row = a_ok[i] ? s / p.top_k : 0;
    else a_row = static_cast<int64_t>(m_block) * t.bm + row;
    a_src[i] = static_cast<const unsigned char*>(p.a) + a_row * p.lda * 2;
  }
  const unsigned char* b_src[kBChunks];
  bool b_ok[kBChunks];
#pragma unroll
  for (int i = 0; i < kBChunks; ++i) {
    const int row = (tid + i * kThreads) / kBCpr;
    const int64_t w_row = b_weight_row(kKind, t, n_tile, row, p.n_size);
    b_ok[i] = w_row >= 0;
    b_src[i] = static_cast<const unsigned char*>(p.w) + ((static_cast<int64_t>(e) * p.w_rows + (b_ok[i] ? w_row : 0)) *
                                                          p.K) * kWB;
  }

  auto load_stage = [&](int stage, int kt) {
    const int64_t k0 = static_cast<int64_t>(kt) * t.bk;
    unsigned char* as = a_smem + stage * t.a_stage_bytes();
    unsigned char* bs = b_smem + stage * t.b_stage_bytes(kWB);
#pragma unroll
    for (int i = 0; i < kAChunks; ++i) {
      const int c = tid + i * kThreads, row = c / kACpr, ch = c % kACpr;
      const int64_t k = k0 + ch * 8;
      const bool ok = a_ok[i] && k < p.K;
      cp_async16(as + row * t.a_row_bytes() + ch * 16, ok ? a_src[i] + k * 2 : static_cast<const unsigned char*>(p.a),
                 ok ? 16 : 0);
    }
#pragma unroll
    for (int i = 0; i < kBChunks; ++i) {
      const int c = tid + i * kThreads, row = c / kBCpr, ch = c % kBCpr;
      const int64_t k = k0 + ch * kElemsPerBChunk;
      const bool ok = b_ok[i] && k < p.K;
      cp_async16(bs + row * t.b_row_bytes(kWB) + ch * 16,
                 ok ? b_src[i] + k * kWB : static_cast<const unsigned char*>(p.w), ok ? 16 : 0);
    }
  };

  // fp8: the scale of each of this thread's n8 tiles for k tile kt (0 for rows past the end).
  constexpr int kNt = Cfg::kTile.nt;
  auto load_scales = [&](float (&sc)[kNt], int kt) {
#pragma unroll
    for (int j = 0; j < kNt; ++j) {
      const int64_t w_row = b_weight_row(kKind, t, n_tile, b_tile_row(kKind, t, warp_n, j) + frag_row(lane), p.n_size);
      sc[j] = w_row < 0 ? 0.f
                        : __ldg(p.w_scale + scale_index(e, w_row, static_cast<int64_t>(kt) * t.bk, p.w_rows, p.K));
    }
  };

  float acc[t.mt][t.nt][4];
#pragma unroll
  for (int i = 0; i < t.mt; ++i)
#pragma unroll
    for (int j = 0; j < t.nt; ++j)
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.f;

  const int KT = static_cast<int>((p.K + t.bk - 1) / t.bk);
#pragma unroll
  for (int s = 0; s < t.stages - 1; ++s) {
    if (s < KT) load_stage(s, s);
    cp_async_commit();
  }
  [[maybe_unused]] float sc[t.nt] = {}, sc_next[t.nt] = {};
  if constexpr (kFp8) load_scales(sc, 0);

  for (int kt = 0; kt < KT; ++kt) {
    cp_async_wait<t.stages - 2>();
    __syncthreads();  // stage kt landed for every thread; stage kt - 1 is free to refill
    const int next = kt + t.stages - 1;
    if (next < KT) load_stage(next % t.stages, next);
    cp_async_commit();
    if constexpr (kFp8) {
      if (kt + 1 < KT) load_scales(sc_next, kt + 1);
    }

    const unsigned char* as = a_smem + (kt % t.stages) * t.a_stage_bytes();
    const unsigned char* bs = b_smem + (kt % t.stages) * t.b_stage_bytes(kWB);
#pragma unroll
    for (int ks = 0; ks < t.bk / 16; ++ks) {
      uint32_t af[t.mt][4];
#pragma unroll
      for (int i = 0; i < t.mt; ++i) {
        const int row0 = (warp_m * t.mt + i) * 16;
        ldmatrix_x4(af[i], as + a_ldm_row(row0, lane) * t.a_row_bytes() + a_ldm_col(ks, lane) * 2);
      }
      uint32_t bf[t.nt][2];
      if constexpr (!kFp8) {
#pragma unroll
        for (int j = 0; j < t.nt; j += 2) {
          uint32_t r[4];
          const int row = b_ldm_row(b_tile_row(kKind, t, warp_n, j), b_tile_row(kKind, t, warp_n, j + 1), lane);
          ldmatrix_x4(r, bs + row * t.b_row_bytes(kWB) + b_ldm_col(ks, lane) * 2);
          bf[j][0] = r[0];
          bf[j][1] = r[1];
          bf[j + 1][0] = r[2];
          bf[j + 1][1] = r[3];
        }
      } else {
#pragma unroll
        for (int j = 0; j < t.nt; ++j) {
          const unsigned char* row = bs + (b_tile_row(kKind, t, warp_n, j) + frag_row(lane)) * t.b_row_bytes(kWB);
          const int k = ks * 16 + frag_col(lane);
          bf[j][0] = dequant_fp8x2<Act>(*reinterpret_cast<const uint16_t*>(row + k), sc[j]);
          bf[j][1] = dequant_fp8x2<Act>(*reinterpret_cast<const uint16_t*>(row + k + 8), sc[j]);
        }
      }
#pragma unroll
      for (int i = 0; i < t.mt; ++i)
#pragma unroll
        for (int j = 0; j < t.nt; ++j) ActTraits<Act>::mma(acc[i][j], af[i], bf[j]);
    }
    if constexpr (kFp8) {
#pragma unroll
      for (int j = 0; j < t.nt; ++j) sc[j] = sc_next[j];
    }
  }
  cp_async_wait<0>();

  // Epilogue straight from the accumulators: rows g and g + 8 of each m16 tile.
#pragma unroll
  for (int i = 0; i < t.mt; ++i) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int r = (warp_m * t.mt + i) * 16 + frag_row(lane) + 8 * half;
      const int s = slot_ids[r];
      if (s >= p.num_slots) continue;  // padding
      if constexpr (kKind == Kind::gate_up) {
        const int64_t pos = static_cast<int64_t>(m_block) * t.bm + r;
        uint32_t* out = static_cast<uint32_t*>(p.c);
#pragma unroll
        for (int j = 0; j < t.nt / 2; ++j) {
          const int64_t col = out_col(kKind, t, n_tile, warp_n, j, lane);
          if (col >= p.n_size) continue;
          const float* g = acc[i][j] + 2 * half;
          const float* u = acc[i][j + t.nt / 2] + 2 * half;
          out[(pos * p.n_size + col) / 2] = ActTraits<Act>::pack(silu(g[0]) * u[0], silu(g[1]) * u[1]);
        }
      } else {
        const float w = p.topk_weights[s];
        uint32_t* out = static_cast<uint32_t*>(p.c);
#pragma unroll
        for (int j = 0; j < t.nt; ++j) {
          const int64_t col = out_col(kKind, t, n_tile, warp_n, j, lane);
          if (col >= p.n_size) continue;
          const float* d = acc[i][j] + 2 * half;
          out[(static_cast<int64_t>(s) * p.n_size + col) / 2] = ActTraits<Act>::pack(d[0] * w, d[1] * w);
        }
      }
    }
  }
}

}  // namespace fk::ops::moe_gemm
