// maxsim CUDA baseline: scores[a, b] = sum over query rows of the max over document rows of
// their dot products, a GEMM whose epilogue is a segmented row max and a segmented sum.
//
// One block of 4 warps takes a block of whole documents (as many as fit in 96 KB of shared
// memory at the bound max_seqlen_d, at most 16; two blocks share an SM) and a chunk of
// queries (enough chunks that the grid fills the device twice over). The documents' rows
// are copied into shared memory once (cp.async) and stay there while every query row of the
// chunk passes by. The chunk's query rows are packed, not padded per query: a warp takes 32
// consecutive rows (two 16-row m16n8k16 tiles, whatever queries they belong to), loads them
// from global memory straight into A fragments (64 registers at D = 128) and sweeps each
// document 16 rows a turn (two 8-row n-tiles, four independent accumulator chains). The
// running max of every query row stays in the accumulator layout; one reduction over the 4
// lanes of a row at the end of a document gives the row maxima, which add up per query in a
// shared f32 accumulator per (query, document) (one atomic add per warp when the 32 rows are
// one query: ColBERT's 32-token queries are exactly that). The block writes its scores once.
// When a chunk has fewer 32-row units than warps, the warps sharing a unit split the
// documents between them (re-ranking one query: each warp its own documents).
//
// The k dimension is permuted, the same way in both operands (a dot product does not care):
// within each 32 columns, lane q of a quad owns the 8 consecutive columns 8q..8q+7, the first
// four in MMA k-step 2p and the last four in 2p+1. So every fragment load is one 16-byte word,
// from global memory for the queries (a quad reads 64 contiguous bytes of a row) and from
// shared memory for the documents (a row's 16-byte chunks XOR-swizzled by the row's parity,
// so the 8 lanes of a load phase, 2 rows x 4 chunks, hit distinct banks).
// D is padded to the tile width 32, 64, 128 or 256 with zeros on both sides; rows past a
// document's end are masked to -inf before the max. A document longer than the shared tile
// (possible only with one document a block) streams through it in tile-sized chunks, the
// warps' running maxima carried across them. Accumulation is fp32 throughout.
//
// f32 inputs take a plain FMA kernel: a warp takes 4 query rows at a time, each lane a
// document row, and dots them in fp32 from global memory (L1-cached).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "fk/cuda/async_copy.cuh"
#include "fk/cuda/check.h"
#include "fk/cuda/mma.cuh"
#include "fk/cuda/sm_count.h"
#include "fk/cuda/vec.cuh"
#include "fk/op_registry.h"
#include "ops/retrieval/maxsim_validate.h"

namespace fk::ops {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kUnitRows = 32;             // query rows a warp holds: two 16-row MMA tiles
constexpr int kDocTileBytes = 96 * 1024;  // documents' rows on chip: two blocks an SM
constexpr int kMaxDocsPerBlock = 16;
constexpr int kMaxQueriesPerBlock = 64;
constexpr int kF32Rows = 4;  // query rows a warp of the f32 kernel holds

template <class T>
struct MaxSimParams {
  const T* query;
  const T* doc;
  const int32_t* cu_q;
  const int32_t* cu_d;
  float* scores;               // [num_queries, num_docs], contiguous
  int64_t q_stride, d_stride;  // row strides in elements
  int64_t num_queries, num_docs;
  int64_t query_chunks;  // ceil(num_queries / queries_per_block)
  int dim;
  int docs_per_block;
  int queries_per_block;
  int tile_rows;  // document rows the shared tile holds (a multiple of 16); unused by the f32 kernel
};

// The shared accumulators and offsets after the document tile: scores [queries][docs] of
// the block, then its query offsets and document offsets.
struct BlockShared {
  float* acc;
  int* cu_q;
  int* cu_d;
};

__device__ __forceinline__ BlockShared block_shared(void* base, int queries_per_block, int docs_per_block) {
  BlockShared s;
  s.acc = static_cast<float*>(base);
  s.cu_q = reinterpret_cast<int*>(s.acc + queries_per_block * docs_per_block);
  s.cu_d = s.cu_q + queries_per_block + 1;
  return s;
}

// Bytes of BlockShared for a block shape.
size_t block_shared_bytes(int queries_per_block, int docs_per_block) {
  return sizeof(float) * static_cast<size_t>(queries_per_block) * docs_per_block +
         sizeof(int) * static_cast<size_t>(queries_per_block + 1 + docs_per_block + 1);
}

// The block's query index (0 .. na-1) of an absolute packed query row: the last query that
// starts at or before it (empty queries start where the next one does, and are skipped).
__device__ __forceinline__ int query_of(const int* cu_q, int na, int row) {
  int lo = 0, hi = na;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (cu_q[mid] <= row)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

// Loads the offsets of queries [a0, a0 + na) and documents [b0, b0 + nb) and zeroes the
// block's scores. Ends with a barrier.
template <class T>
__device__ __forceinline__ void begin_block(const BlockShared& s, const MaxSimParams<T>& p, int64_t a0, int na,
                                            int64_t b0, int nb) {
  __syncthreads();  // the previous chunk's scores are written out and its tile is used
  for (int i = threadIdx.x; i <= na; i += kThreads) s.cu_q[i] = p.cu_q[a0 + i];
  for (int i = threadIdx.x; i <= nb; i += kThreads) s.cu_d[i] = p.cu_d[b0 + i];
  for (int i = threadIdx.x; i < na * nb; i += kThreads) s.acc[i] = 0.f;
  __syncthreads();
}

// Writes the block's scores once every warp has added its rows. Every (query, document)
// pair of the block is written, zeros included (empty queries and documents).
template <class T>
__device__ __forceinline__ void end_block(const BlockShared& s, const MaxSimParams<T>& p, int64_t a0, int na,
                                          int64_t b0, int nb) {
  __syncthreads();
  for (int i = threadIdx.x; i < na * nb; i += kThreads) p.scores[(a0 + i / nb) * p.num_docs + b0 + i % nb] = s.acc[i];
}

// ---- the tensor-core kernel (f16, bf16) ---------------------------------------------------

// Physical 16-byte chunk of logical chunk c in shared row r (see the file comment).
template <int kD>
__device__ __forceinline__ int swizzle(int r, int c) {
  if constexpr (kD >= 64)
    return c ^ ((r & 1) << 2);
  else
    return c;  // 64-byte rows: two rows fill the 128 bytes of a load phase already
}

// Copies document rows [row0, row0 + rows) into the tile (cp.async, one commit group);
// columns past D are zero-filled.
template <class T, int kD>
__device__ __forceinline__ void load_doc_rows(T* tile, const MaxSimParams<T>& p, int64_t row0, int rows) {
  constexpr int kChunks = kD / 8;
  for (int i = threadIdx.x; i < rows * kChunks; i += kThreads) {
    const int r = i / kChunks, c = i % kChunks;
    const T* src = p.doc + (row0 + r) * p.d_stride;
    T* dst = tile + r * kD + swizzle<kD>(r, c) * 8;
    if (c * 8 < p.dim)
      cuda::cp_async16(dst, src + c * 8);
    else
      cuda::cp_async16(dst, src, 0);
  }
  cuda::cp_async_commit();
}

// A warp's 32 query rows as A fragments: a[m-tile][32-column group][rows g, g + 8], this
// lane's 8 columns 32p + 8q .. + 7 of each. Rows past `rows` and columns past D are zeros.
template <class T, int kD>
struct QueryFrags {
  uint4 a[2][kD / 32][2];
};

template <class T, int kD>
__device__ __forceinline__ void load_query_frags(QueryFrags<T, kD>& f, const MaxSimParams<T>& p, int64_t row0,
                                                 int rows) {
  const int lane = threadIdx.x % 32, g = lane / 4, qd = lane % 4;
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = mt * 16 + h * 8 + g;
#pragma unroll
      for (int pp = 0; pp < kD / 32; ++pp) {
        const int col = pp * 32 + qd * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (r < rows && col < p.dim) v = __ldg(reinterpret_cast<const uint4*>(p.query + (row0 + r) * p.q_stride + col));
        f.a[mt][pp][h] = v;
      }
    }
}

// m[m-tile][e] = max(m, this lane's dot products with tile rows [r0, r0 + len)): columns
// 2q, 2q + 1 of rows g (e = 0, 1) and g + 8 (e = 2, 3) of each MMA tile, over the n-tiles.
template <class T, int kD>
__device__ __forceinline__ void doc_max(float (&m)[2][4], const QueryFrags<T, kD>& f, const T* tile, int r0, int len) {
  const int lane = threadIdx.x % 32, g = lane / 4, qd = lane % 4;
  for (int t = 0; t < len; t += 16) {
    float c[2][2][4];  // [n-tile][m-tile][element]
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) c[nt][mt][0] = c[nt][mt][1] = c[nt][mt][2] = c[nt][mt][3] = 0.f;
#pragma unroll
    for (int pp = 0; pp < kD / 32; ++pp) {
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        const int r = r0 + t + nt * 8 + g;
        const uint4 b = *reinterpret_cast<const uint4*>(tile + r * kD + swizzle<kD>(r, pp * 4 + qd) * 8);
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          const uint4 &lo = f.a[mt][pp][0], &hi = f.a[mt][pp][1];
          const uint32_t k0[4] = {lo.x, hi.x, lo.y, hi.y};  // columns 8q .. 8q + 3
          const uint32_t k1[4] = {lo.z, hi.z, lo.w, hi.w};  // columns 8q + 4 .. 8q + 7
          cuda::mma_16x8x16<T>(c[nt][mt], k0, b.x, b.y);
          cuda::mma_16x8x16<T>(c[nt][mt], k1, b.z, b.w);
        }
      }
    }
    const bool full = t + 16 <= len;
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float v = c[nt][mt][e];
          // Rows past the document (the next document's, or stale tile rows): not its rows.
          if (!full && t + nt * 8 + 2 * qd + (e & 1) >= len) v = -INFINITY;
          m[mt][e] = fmaxf(m[mt][e], v);
        }
  }
}

// A warp's 32 query rows of the chunk: [row, row + 32) relative to the chunk's first row,
// valid up to `last`, and the queries they belong to (binary searches, once a unit).
struct UnitRows {
  int row, last;
  int first_query;
  bool one_query;  // every valid row is first_query's (ColBERT's 32-token queries)
};

__device__ __forceinline__ UnitRows unit_rows(const BlockShared& s, int na, int q_begin, int unit, int rows_q) {
  UnitRows u;
  u.row = unit * kUnitRows;
  u.last = min(u.row + kUnitRows, rows_q) - 1;
  u.first_query = query_of(s.cu_q, na, q_begin + u.row);
  u.one_query = u.first_query == query_of(s.cu_q, na, q_begin + u.last);
  return u;
}

// Adds the row maxima of a warp's 32 query rows (m, after doc_max over a whole document) to
// the block's scores of document j.
__device__ __forceinline__ void add_row_maxima(const float (&m)[2][4], const BlockShared& s, int na, int nb, int j,
                                               int q_begin, const UnitRows& u) {
  const int lane = threadIdx.x % 32, g = lane / 4, qd = lane % 4;
  float r[2][2];  // [m-tile][rows g, g + 8]
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) {
    r[mt][0] = fmaxf(m[mt][0], m[mt][1]);
    r[mt][1] = fmaxf(m[mt][2], m[mt][3]);
#pragma unroll
    for (int off = 1; off < 4; off <<= 1) {
      r[mt][0] = fmaxf(r[mt][0], __shfl_xor_sync(0xffffffffu, r[mt][0], off));
      r[mt][1] = fmaxf(r[mt][1], __shfl_xor_sync(0xffffffffu, r[mt][1], off));
    }
  }
  if (u.one_query) {
    // The warp's sum, one atomic add: one order of additions whatever the schedule, so
    // ColBERT's queries get the same scores every call.
    float sum = 0.f;
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        if (qd == 0 && u.row + mt * 16 + h * 8 + g <= u.last) sum += r[mt][h];
    sum = cuda::warp_sum(sum);
    if (lane == 0) atomicAdd(&s.acc[u.first_query * nb + j], sum);
    return;
  }
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = u.row + mt * 16 + h * 8 + g;
      if (qd == 0 && row <= u.last) atomicAdd(&s.acc[query_of(s.cu_q, na, q_begin + row) * nb + j], r[mt][h]);
    }
}

__device__ __forceinline__ void reset_max(float (&m)[2][4]) {
#pragma unroll
  for (int mt = 0; mt < 2; ++mt) m[mt][0] = m[mt][1] = m[mt][2] = m[mt][3] = -INFINITY;
}

template <class T, int kD>
__global__ void __launch_bounds__(kThreads, 2) maxsim_mma_kernel(const MaxSimParams<T> p) {
  extern __shared__ uint4 smem_raw[];
  T* tile = reinterpret_cast<T*>(smem_raw);
  // 16 rows past the tile: a document's last turn reads two whole n-tiles (masked).
  const BlockShared s = block_shared(tile + (p.tile_rows + 16) * kD, p.queries_per_block, p.docs_per_block);
  const int warp = threadIdx.x / 32;
  const int64_t b0 = static_cast<int64_t>(blockIdx.x) * p.docs_per_block;
  const int nb = static_cast<int>(min(static_cast<int64_t>(p.docs_per_block), p.num_docs - b0));

  for (int64_t chunk = blockIdx.y; chunk < p.query_chunks; chunk += gridDim.y) {
    const int64_t a0 = chunk * p.queries_per_block;
    const int na = static_cast<int>(min(static_cast<int64_t>(p.queries_per_block), p.num_queries - a0));
    begin_block(s, p, a0, na, b0, nb);
    const int q_begin = s.cu_q[0], rows_q = s.cu_q[na] - q_begin;
    const int d_begin = s.cu_d[0], rows_d = s.cu_d[nb] - d_begin;
    const int units = (rows_q + kUnitRows - 1) / kUnitRows;
    QueryFrags<T, kD> f;
    float m[2][4];
    if (rows_q > 0 && rows_d > 0 && rows_d <= p.tile_rows) {
      // Every document of the block on chip at once. Warps sharing a unit (fewer units than
      // warps) take turns over the documents.
      const int share = units >= kWarps ? 1 : kWarps / units;
      const int first_unit = warp / share;
      load_doc_rows<T, kD>(tile, p, d_begin, rows_d);
      if (first_unit < units)  // in flight with the tile's copies
        load_query_frags(f, p, q_begin + static_cast<int64_t>(first_unit) * kUnitRows, rows_q - first_unit * kUnitRows);
      cuda::cp_async_wait_all();
      __syncthreads();
      for (int u = first_unit; u < units; u += kWarps / share) {
        if (u != first_unit)
          load_query_frags(f, p, q_begin + static_cast<int64_t>(u) * kUnitRows, rows_q - u * kUnitRows);
        const UnitRows ur = unit_rows(s, na, q_begin, u, rows_q);
        for (int j = warp % share; j < nb; j += share) {
          const int r0 = s.cu_d[j] - d_begin, len = s.cu_d[j + 1] - s.cu_d[j];
          if (len == 0) continue;  // no rows: every query row adds 0
          reset_max(m);
          doc_max(m, f, tile, r0, len);
          add_row_maxima(m, s, na, nb, j, q_begin, ur);
        }
      }
    } else if (rows_q > 0 && rows_d > 0) {
      // Longer than the tile: one document at a time, in tile-sized chunks, every warp's
      // running maxima carried across them. The loop bounds are the block's, so every warp
      // reaches every barrier.
      for (int j = 0; j < nb; ++j) {
        const int len = s.cu_d[j + 1] - s.cu_d[j];
        for (int round = 0; round * kWarps < units && len > 0; ++round) {
          const int u = round * kWarps + warp;
          const bool active = u < units;
          if (active) load_query_frags(f, p, q_begin + static_cast<int64_t>(u) * kUnitRows, rows_q - u * kUnitRows);
          reset_max(m);
          for (int c0 = 0; c0 < len; c0 += p.tile_rows) {
            const int n = min(p.tile_rows, len - c0);
            __syncthreads();  // the tile's previous rows are used
            load_doc_rows<T, kD>(tile, p, static_cast<int64_t>(s.cu_d[j]) + c0, n);
            cuda::cp_async_wait_all();
            __syncthreads();
            if (active) doc_max(m, f, tile, 0, n);
          }
          if (active) add_row_maxima(m, s, na, nb, j, q_begin, unit_rows(s, na, q_begin, u, rows_q));
        }
      }
    }
    end_block(s, p, a0, na, b0, nb);
  }
}

// ---- the FMA kernel (f32) -----------------------------------------------------------------

__global__ void __launch_bounds__(kThreads) maxsim_f32_kernel(const MaxSimParams<float> p) {
  extern __shared__ uint4 smem_raw[];
  const BlockShared s = block_shared(smem_raw, p.queries_per_block, p.docs_per_block);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t b0 = static_cast<int64_t>(blockIdx.x) * p.docs_per_block;
  const int nb = static_cast<int>(min(static_cast<int64_t>(p.docs_per_block), p.num_docs - b0));

  for (int64_t chunk = blockIdx.y; chunk < p.query_chunks; chunk += gridDim.y) {
    const int64_t a0 = chunk * p.queries_per_block;
    const int na = static_cast<int>(min(static_cast<int64_t>(p.queries_per_block), p.num_queries - a0));
    begin_block(s, p, a0, na, b0, nb);
    const int q_begin = s.cu_q[0], rows_q = s.cu_q[na] - q_begin;
    for (int row0 = warp * kF32Rows; row0 < rows_q; row0 += kWarps * kF32Rows) {
      const int rows = min(kF32Rows, rows_q - row0);
      // Rows past the chunk repeat its last row (never added).
      const float* qr[kF32Rows];
#pragma unroll
      for (int i = 0; i < kF32Rows; ++i)
        qr[i] = p.query + static_cast<int64_t>(q_begin + row0 + min(i, rows - 1)) * p.q_stride;
      for (int j = 0; j < nb; ++j) {
        const int start = s.cu_d[j], len = s.cu_d[j + 1] - start;
        if (len == 0) continue;  // no rows: every query row adds 0
        float m[kF32Rows];
#pragma unroll
        for (int i = 0; i < kF32Rows; ++i) m[i] = -INFINITY;
        for (int t = lane; t < len; t += 32) {
          const float* dr = p.doc + static_cast<int64_t>(start + t) * p.d_stride;
          float acc[kF32Rows] = {};
          for (int k = 0; k < p.dim; k += 4) {
            const float4 dv = __ldg(reinterpret_cast<const float4*>(dr + k));
#pragma unroll
            for (int i = 0; i < kF32Rows; ++i) {
              const float4 qv = __ldg(reinterpret_cast<const float4*>(qr[i] + k));
              acc[i] = fmaf(qv.x, dv.x, acc[i]);
              acc[i] = fmaf(qv.y, dv.y, acc[i]);
              acc[i] = fmaf(qv.z, dv.z, acc[i]);
              acc[i] = fmaf(qv.w, dv.w, acc[i]);
            }
          }
#pragma unroll
          for (int i = 0; i < kF32Rows; ++i) m[i] = fmaxf(m[i], acc[i]);
        }
#pragma unroll
        for (int i = 0; i < kF32Rows; ++i) m[i] = cuda::warp_max(m[i]);
        if (lane == 0)
          for (int i = 0; i < rows; ++i) atomicAdd(&s.acc[query_of(s.cu_q, na, q_begin + row0 + i) * nb + j], m[i]);
      }
    }
    end_block(s, p, a0, na, b0, nb);
  }
}

// ---- launch -------------------------------------------------------------------------------

// The block shape: documents a block (docs_per_block) and queries a block (queries_per_block)
// from the host bounds, and the grid.
struct Plan {
  int docs_per_block = 1;
  int queries_per_block = 1;
  int tile_rows = 0;
  int64_t query_chunks = 1;
  dim3 grid;
};

// docs_per_block documents of max_seqlen_d rows each fit in `tile_cap` rows (1 when none
// fit: the kernel streams a long document through the tile); then enough query chunks for
// two waves of two blocks an SM, keeping at least 4 warps' worth of query rows a block.
Plan plan_blocks(int64_t bq, int64_t bd, int max_q, int max_d, int tile_cap, int max_docs) {
  Plan pl;
  const int doc_rows = std::max(max_d, 1);
  pl.docs_per_block = static_cast<int>(std::clamp<int64_t>(tile_cap / doc_rows, 1, std::min<int64_t>(max_docs, bd)));
  pl.tile_rows = static_cast<int>(
      std::min<int64_t>(tile_cap, cuda::round_up(std::min(pl.docs_per_block * doc_rows, tile_cap), 16)));
  const int64_t doc_blocks = cuda::ceil_div(bd, pl.docs_per_block);
  FK_CHECK(doc_blocks < (int64_t{1} << 31), MaxSimArgs::kName, ": ", bd, " documents exceed the grid");
  const int64_t want_blocks = 4 * static_cast<int64_t>(cuda::current_sm_count());
  const int64_t min_queries =
      std::clamp<int64_t>(cuda::ceil_div(kWarps * kUnitRows, std::max(max_q, 1)), 1, kMaxQueriesPerBlock);
  int64_t chunks = std::max<int64_t>(1, cuda::ceil_div(want_blocks, doc_blocks));
  chunks = std::min(chunks, std::max<int64_t>(1, cuda::ceil_div(bq, min_queries)));
  pl.queries_per_block = static_cast<int>(std::clamp<int64_t>(cuda::ceil_div(bq, chunks), 1, kMaxQueriesPerBlock));
  pl.query_chunks = cuda::ceil_div(bq, pl.queries_per_block);
  pl.grid = dim3(static_cast<unsigned>(doc_blocks), static_cast<unsigned>(std::min<int64_t>(pl.query_chunks, 65535)));
  return pl;
}

template <class T>
MaxSimParams<T> make_params(const MaxSimArgs& a, const Plan& pl) {
  MaxSimParams<T> p{};
  p.query = static_cast<const T*>(a.query.data);
  p.doc = static_cast<const T*>(a.doc.data);
  p.cu_q = static_cast<const int32_t*>(a.cu_seqlens_q.data);
  p.cu_d = static_cast<const int32_t*>(a.cu_seqlens_d.data);
  p.scores = static_cast<float*>(a.scores.data);
  p.q_stride = a.query.strides[0];
  p.d_stride = a.doc.strides[0];
  p.num_queries = a.cu_seqlens_q.shape[0] - 1;
  p.num_docs = a.cu_seqlens_d.shape[0] - 1;
  p.query_chunks = pl.query_chunks;
  p.dim = static_cast<int>(a.query.shape[1]);
  p.docs_per_block = pl.docs_per_block;
  p.queries_per_block = pl.queries_per_block;
  p.tile_rows = pl.tile_rows;
  return p;
}

template <class T, int kD>
void launch_mma(const MaxSimArgs& a, cudaStream_t stream) {
  constexpr int kTileCap = kDocTileBytes / (kD * static_cast<int>(sizeof(T)));  // a multiple of 16
  constexpr size_t kMaxSmem = (kTileCap + 16) * kD * sizeof(T) +
                              sizeof(float) * kMaxQueriesPerBlock * kMaxDocsPerBlock +
                              sizeof(int) * (kMaxQueriesPerBlock + kMaxDocsPerBlock + 2);
  static const bool attribute_set = [] {
    FK_CUDA_CHECK(cudaFuncSetAttribute(maxsim_mma_kernel<T, kD>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       static_cast<int>(kMaxSmem)));
    return true;
  }();
  (void)attribute_set;
  const Plan pl = plan_blocks(a.cu_seqlens_q.shape[0] - 1, a.cu_seqlens_d.shape[0] - 1, a.max_seqlen_q, a.max_seqlen_d,
                              kTileCap, kMaxDocsPerBlock);
  const size_t smem = static_cast<size_t>(pl.tile_rows + 16) * kD * sizeof(T) +
                      block_shared_bytes(pl.queries_per_block, pl.docs_per_block);
  maxsim_mma_kernel<T, kD><<<pl.grid, kThreads, smem, stream>>>(make_params<T>(a, pl));
  FK_CUDA_CHECK_LAUNCH();
}

void launch_f32(const MaxSimArgs& a, cudaStream_t stream) {
  // No tile: documents are read from global memory, one a block.
  const Plan pl =
      plan_blocks(a.cu_seqlens_q.shape[0] - 1, a.cu_seqlens_d.shape[0] - 1, a.max_seqlen_q, a.max_seqlen_d, 1, 1);
  const size_t smem = block_shared_bytes(pl.queries_per_block, pl.docs_per_block);
  maxsim_f32_kernel<<<pl.grid, kThreads, smem, stream>>>(make_params<float>(a, pl));
  FK_CUDA_CHECK_LAUNCH();
}

template <class T>
void launch_16bit(const MaxSimArgs& a, int64_t dim, cudaStream_t stream) {
  if (dim <= 32) return launch_mma<T, 32>(a, stream);
  if (dim <= 64) return launch_mma<T, 64>(a, stream);
  if (dim <= 128) return launch_mma<T, 128>(a, stream);
  return launch_mma<T, 256>(a, stream);
}

fk_status maxsim_cuda(const void* args, void* stream) {
  return op_guard([&] {
    const auto& a = *static_cast<const MaxSimArgs*>(args);
    validate_maxsim(a, DeviceType::cuda);
    constexpr const char* op = MaxSimArgs::kName;
    const int64_t bq = a.cu_seqlens_q.shape[0] - 1, bd = a.cu_seqlens_d.shape[0] - 1, dim = a.query.shape[1];
    if (bq == 0 || bd == 0) return;
    if (dim % 8 != 0 || dim > 256)
      FK_FAIL(FK_ERR_UNSUPPORTED, op,
              ": the CUDA baseline takes embedding widths that are multiples of 8 up to 256, got ", dim);
    // Rows are read in 16-byte words (a stride of a one-row view is never used).
    for (const TensorView* t : {&a.query, &a.doc})
      if ((t->shape[0] > 1 && (t->strides[0] * t->element_size()) % 16 != 0) || !cuda::aligned16(t->data))
        FK_FAIL(FK_ERR_UNSUPPORTED, op, ": the CUDA baseline needs rows that start 16-byte aligned (data and row ",
                "stride), got ", describe(*t), " with row stride ", t->strides[0]);
    const auto s = static_cast<cudaStream_t>(stream);
    switch (a.query.dtype) {
      case DType::f16:
        return launch_16bit<__half>(a, dim, s);
      case DType::bf16:
        return launch_16bit<__nv_bfloat16>(a, dim, s);
      case DType::f32:
        return launch_f32(a, s);
      default:
        FK_FAIL(FK_ERR_UNSUPPORTED, op, ": dtype ", dtype_name(a.query.dtype), " is not supported on CUDA");
    }
  });
}

FK_REGISTER_IMPL("maxsim", cuda, maxsim_cuda);

}  // namespace
}  // namespace fk::ops
