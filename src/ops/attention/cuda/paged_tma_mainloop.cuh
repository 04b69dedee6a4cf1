// Paged-KV loads by TMA for FlashInfer's Hopper prefill kernel (PrefillWithKVCacheKernel).
//
// Why: FlashInfer's paged prefill mainloop gathers K and V with cp.async from a whole
// producer warpgroup, 16 bytes per thread and copy; its ragged (contiguous KV) mainloop
// loads a tile with a few TMA copies from one warp. On an H100 the ragged kernel runs 16k
// causal tokens at ~635 TFLOP/s against ~525 for the paged gather. A page is a contiguous
// block of rows, so a KV tile of CTA_KV rows is CTA_KV / B boxes of B = min(page_size,
// CTA_KV) rows: one TMA copy per box and 64-column slab, through a 4-d tensor map over the
// whole cache (D, row in page, KV head, page). With 128-token pages this reaches ~575
// TFLOP/s; with 16-token pages the boxes are too small for the copy engine (~420), so the
// launcher keeps the gather there (prefill_sm90_launch.cuh,
// bench/results/h100/attention_prefill_tma.json). The consumer side (mma_f16) and the
// epilogue are FlashInfer's, unchanged.
//
// Rows past the sequence's end:
//   - a box wholly past the sequence's last page reads page coordinate `num_pages`, out of
//     the tensor map: TMA fills it with zeros;
//   - K rows past kv_len inside the last page are whatever the cache holds: their logits
//     are replaced by -inf by the consumer's mask, so they never matter;
//   - V rows past kv_len inside the last page would be multiplied by a probability of 0,
//     and 0 * NaN is NaN: a stale non-finite row would poison the output. That one box
//     is loaded by the producer warp itself, its tail rows written as zeros.
//
// Shared-memory layout (checked by static_asserts below): a stage holds the tile as
// D / 64 slabs of [CTA_KV rows x 64 columns], rows in 8-row 1024-byte atoms with the
// 128-byte swizzle; a box of B rows starting at tile row r of slab s lands at byte
// s * CTA_KV * 128 + r * 128, 1024-byte aligned since B is a multiple of 8.
#pragma once
#include <cuda.h>

#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <flashinfer/attention/hopper/mainloop.cuh>

namespace fk::ops::attn::sm90 {

using namespace cute;

// Whether the TMA mainloop can load tiles of `cta_kv` rows from pages of `page_size`:
// boxes of whole 8-row swizzle atoms, and a tile made of whole pages or a page of whole
// tiles.
constexpr bool paged_tma_supports(int page_size, int cta_kv) {
  return page_size >= 8 && page_size % 8 == 0 && (cta_kv % page_size == 0 || page_size % cta_kv == 0);
}

template <typename AdditionalParams, typename Ktraits, bool CAUSAL>
struct PagedTmaMainloop : flashinfer::CollectiveMainloop<AdditionalParams, Ktraits, CAUSAL> {
  using Base = flashinfer::CollectiveMainloop<AdditionalParams, Ktraits, CAUSAL>;
  using DTypeQ = typename Base::DTypeQ;
  using DTypeKV = typename Base::DTypeKV;
  using IdType = typename Ktraits::IdType;
  using TileShape_QKD = typename Base::TileShape_QKD;
  using LayoutT = typename Base::LayoutT;
  using TMA_Q = typename Base::TMA_Q;
  using SmemLayoutQ = typename Base::SmemLayoutQ;
  using SmemLayoutK = typename Base::SmemLayoutK;
  using SmemLayoutV = typename Base::SmemLayoutV;
  using MainloopPipeline = typename Base::MainloopPipeline;
  using PipelineState = typename Base::PipelineState;
  static constexpr int CTA_Q = Base::CTA_Q;
  static constexpr int CTA_KV = Base::CTA_KV;
  static constexpr int HEAD_DIM = Base::HEAD_DIM_QK;
  static constexpr int NUM_MMA_THREADS = Base::NUM_MMA_THREADS;
  static constexpr int kSlabCols = 128 / sizeof(DTypeKV);  // one 128-byte swizzle row
  static constexpr int kSlabs = HEAD_DIM / kSlabCols;
  static constexpr uint32_t kTileBytes = CTA_KV * HEAD_DIM * sizeof(DTypeKV);
  static_assert(Base::HEAD_DIM_QK == Base::HEAD_DIM_VO, "K and V share the tensor map geometry");
  static_assert(sizeof(DTypeKV) == 2, "16-bit KV: 64 columns per 128-byte slab row");
  static_assert(HEAD_DIM % kSlabCols == 0);
  static_assert(CTA_KV / 8 * kSlabs <= 32, "a lane per TMA box and slab, with boxes of >= 8 rows");

  // The layout assumed above: rows first in 8-row atoms, then 64-column slabs, then stages.
  static_assert(get_nonswizzle_portion(SmemLayoutK{})(8, 0, 0) == 8 * kSlabCols, "rows in 8-row atoms");
  static_assert(kSlabs == 1 || get_nonswizzle_portion(SmemLayoutK{})(0, kSlabCols, 0) == CTA_KV * kSlabCols,
                "slabs of CTA_KV rows");
  static_assert(get_nonswizzle_portion(SmemLayoutK{})(0, 0, 1) == CTA_KV * HEAD_DIM, "stages after the tile");
  static_assert(cosize(SmemLayoutV{}) == cosize(SmemLayoutK{}) &&
                    get_nonswizzle_portion(SmemLayoutV{})(8, 0, 0) == 8 * kSlabCols &&
                    (kSlabs == 1 || get_nonswizzle_portion(SmemLayoutV{})(0, kSlabCols, 0) == CTA_KV * kSlabCols),
                "V is stored like K");

  struct Arguments {
    DTypeQ const* Q_ptr;
    LayoutT layout_Q;
    CUtensorMap k_map, v_map;  // 4-d maps of the caches (paged_tma_prefill.cuh)
    DTypeKV const* V_ptr;      // for the producer's own loads of a last partial box
    IdType const* kv_indices;
    int64_t page_stride, row_stride;  // elements; K and V share them
    int page_size, num_pages;
    int window_left;
    AdditionalParams additional_params;
  };

  struct Params {
    CUtensorMap k_map, v_map;
    LayoutT layout_Q;
    TMA_Q tma_load_Q;
    DTypeKV const* V_ptr;
    IdType const* kv_indices;
    int64_t page_stride, row_stride;
    int page_size, num_pages;
    int window_left;
    AdditionalParams additional_params;
  };

  static Params to_underlying_arguments(Arguments const& a) {
    Tensor mQ = make_tensor(make_gmem_ptr(a.Q_ptr), a.layout_Q);
    TMA_Q tma_load_Q = make_tma_copy(cute::SM90_TMA_LOAD{}, mQ, SmemLayoutQ{}, select<0, 2>(TileShape_QKD{}), _1{});
    return {a.k_map,      a.v_map,     a.layout_Q,  tma_load_Q,  a.V_ptr,       a.kv_indices,
            a.page_stride, a.row_stride, a.page_size, a.num_pages, a.window_left, a.additional_params};
  }

  CUTLASS_DEVICE static void prefetch_tma_descriptors(Params const& p) {
    cute::prefetch_tma_descriptor(p.tma_load_Q.get_tma_descriptor());
    cute::prefetch_tma_descriptor(&p.k_map);
    cute::prefetch_tma_descriptor(&p.v_map);
  }

  CUTLASS_DEVICE int get_num_kv_tiles(Params const&, int q_tile_idx, const int qo_len, const int kv_len) {
    constexpr int kQ = CTA_Q, kKV = CTA_KV;  // by value: std::min would take the members' addresses
    int num_kv_tiles = cute::ceil_div(kv_len, kKV);
    if constexpr (CAUSAL) {
      const int causal_tiles = cute::ceil_div((q_tile_idx + 1) * kQ + kv_len - qo_len, kKV);
      num_kv_tiles = causal_tiles < num_kv_tiles ? causal_tiles : num_kv_tiles;
    }
    return num_kv_tiles;
  }

  // One KV tile into the stage `state` names, through that stage's barriers in `bars` (the
  // pipeline's shared storage). All 32 lanes of the producer warp call it. Lane l issues
  // the TMA of box l / kSlabs, slab l % kSlabs (at most 32: boxes hold >= 8 rows), so the
  // page numbers are loaded by the lanes in parallel, before the wait for a free stage
  // hides their latency; loading them one by one from one thread ran 16k causal tokens at
  // 224 TFLOP/s with 16-token pages.
  // kZeroTail: the box holding row kv_len - 1, when it has rows past it, is loaded by the
  // warp with those rows zeroed (V only, see the top of the file).
  template <bool kZeroTail, class PipelineStorage>
  CUTLASS_DEVICE void load_tile(Params const& p, const CUtensorMap* map, PipelineStorage& bars, PipelineState& state,
                                DTypeKV* smem, IdType const* pages, int num_seq_pages, int kv_head_idx,
                                int kv_tile_idx, int kv_len) const {
    const int lane = threadIdx.x % 32;
    const int box_rows = p.page_size < CTA_KV ? p.page_size : CTA_KV;
    const int boxes = CTA_KV / box_rows;
    const int tile_row0 = kv_tile_idx * CTA_KV;
    const int my_box = lane / kSlabs, my_slab = lane % kSlabs;
    int my_page = p.num_pages, my_row_in_page = 0;  // past the sequence's pages: outside the map, zeros
    if (my_box < boxes) {
      const int row0 = tile_row0 + my_box * box_rows;
      const int slot = row0 / p.page_size;
      if (slot < num_seq_pages) my_page = pages[slot];
      my_row_in_page = row0 % p.page_size;
    }
    int manual_box = -1;
    if constexpr (kZeroTail) {
      const int last = kv_len - 1 - tile_row0;  // tile row of the last valid row
      if (last < CTA_KV && kv_len % box_rows != 0) manual_box = last / box_rows;
    }
    char* stage_smem = reinterpret_cast<char*>(smem + state.index() * (CTA_KV * HEAD_DIM));
    // producer_acquire without its arrive: the arrive must follow any rows the warp writes.
    bars.empty_barrier_[state.index()].wait(state.phase());
    if (manual_box >= 0) {
      const int row0 = tile_row0 + manual_box * box_rows;  // sequence row of the box's first row
      const int valid = kv_len - row0;                      // 1 .. box_rows - 1
      const DTypeKV* src = p.V_ptr + static_cast<int64_t>(pages[row0 / p.page_size]) * p.page_stride +
                           static_cast<int64_t>(row0 % p.page_size) * p.row_stride +
                           static_cast<int64_t>(kv_head_idx) * HEAD_DIM;
      constexpr int kChunksPerRow = HEAD_DIM / 8;  // 16-byte chunks
      for (int i = lane; i < box_rows * kChunksPerRow; i += 32) {
        const int r = i / kChunksPerRow, c = i % kChunksPerRow;
        const int slab = c / 8, cc = c % 8, row = manual_box * box_rows + r;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (r < valid) v = *reinterpret_cast<const uint4*>(src + static_cast<int64_t>(r) * p.row_stride + c * 8);
        const int off = slab * CTA_KV * 128 + (row / 8) * 1024 + (row % 8) * 128 + ((cc ^ (row % 8)) * 16);
        *reinterpret_cast<uint4*>(stage_smem + off) = v;
      }
      // Written through the generic proxy, read by wgmma through the async proxy once the
      // phase completes: fence the proxies, then lane 0's arrive releases the rows.
      cutlass::arch::fence_view_async_shared();
      __threadfence_block();
    }
    __syncwarp();
    auto& full = bars.full_barrier_[state.index()];
    if (lane == 0) {
      const uint32_t manual_bytes = manual_box >= 0 ? box_rows * HEAD_DIM * sizeof(DTypeKV) : 0;
      full.arrive_and_expect_tx(kTileBytes - manual_bytes);  // before any copy can complete
    }
    __syncwarp();
    if (my_box < boxes && my_box != manual_box)
      cute::SM90_TMA_LOAD_4D::copy(map, reinterpret_cast<uint64_t*>(&full), /*cache_hint=*/0,
                                   stage_smem + my_slab * CTA_KV * 128 + my_box * box_rows * 128, my_slab * kSlabCols,
                                   my_row_in_page, kv_head_idx, my_page);
    ++state;
  }

  template <bool LEFT_SLIDING_WINDOW, typename BlockCoord, typename Scheduler, typename SharedStorage>
  CUTLASS_DEVICE void load(Params const& p, MainloopPipeline pipeline_k, MainloopPipeline pipeline_v,
                           PipelineState& smem_pipe_write_k, PipelineState& smem_pipe_write_v,
                           SharedStorage& shared_storage, Scheduler& scheduler,
                           typename Scheduler::Params const& scheduler_params,
                           typename Scheduler::WorkTileInfo& work_tile_info, BlockCoord const& block_coord,
                           int work_idx) {
    Tensor sQ = make_tensor(make_smem_ptr(shared_storage.smem_q.data()), SmemLayoutQ{});
    Tensor mQ = p.tma_load_Q.get_tma_tensor(p.layout_Q.shape());
    auto [q_tile_idx, qo_head_idx, kv_head_idx, qo_indptr, kv_indptr, qo_len, kv_len, batch_idx] = block_coord;
    Tensor gQ = flashinfer::get_local_tile_tensor(mQ, select<0, 2>(TileShape_QKD{}), qo_head_idx, qo_indptr,
                                                  qo_len)(_, _, q_tile_idx);
    Tensor sQ_x = make_tensor(sQ.data(), make_layout(sQ.layout(), Layout<_1>{}));
    Tensor gQ_x = make_tensor(gQ.data(), make_layout(gQ.layout(), Layout<_1>{}));
    auto [tQgQ, tQsQ] =
        tma_partition(p.tma_load_Q, _0{}, Layout<_1>{}, group_modes<0, 2>(sQ_x), group_modes<0, 2>(gQ_x));

    IdType const* pages = p.kv_indices + kv_indptr;
    const int num_seq_pages = cute::ceil_div(kv_len, p.page_size);
    DTypeKV* sK = shared_storage.smem_k.data();
    DTypeKV* sV = shared_storage.smem_v.data();
    auto load_k = [&](int t) {
      load_tile<false>(p, &p.k_map, shared_storage.pipeline_k, smem_pipe_write_k, sK, pages, num_seq_pages,
                       kv_head_idx, t, kv_len);
    };
    auto load_v = [&](int t) {
      load_tile<true>(p, &p.v_map, shared_storage.pipeline_v, smem_pipe_write_v, sV, pages, num_seq_pages,
                      kv_head_idx, t, kv_len);
    };

    int num_kv_tiles = get_num_kv_tiles(p, q_tile_idx, qo_len, kv_len);
    int kv_tile_idx = num_kv_tiles - 1;
    int swa_begin_kv_tile_idx = 0;
    if constexpr (LEFT_SLIDING_WINDOW)
      swa_begin_kv_tile_idx =
          flashinfer::get_swa_begin_kv_tile_idx<CTA_Q, CTA_KV>(p.window_left, q_tile_idx, qo_len, kv_len);

    // The order of FlashInfer's TMA mainloop: K of the last tile, then Q once the consumers
    // freed it, then K of the tile before with V of the tile after, down to the first tile.
    load_k(kv_tile_idx);
    cutlass::arch::NamedBarrier::sync(NUM_MMA_THREADS + Ktraits::NUM_PRODUCER_THREADS,
                                      static_cast<int>(flashinfer::NamedBarriers::kQueryEmpty));
    if (cute::elect_one_sync()) {
      shared_storage.barrier_Q.arrive_and_expect_tx(Base::TmaTransactionBytesQ);
      copy(p.tma_load_Q.with(
               reinterpret_cast<cutlass::arch::ClusterTransactionBarrier::ValueType&>(shared_storage.barrier_Q),
               /*mcast_mask=*/0),
           tQgQ, tQsQ);
    }
    // V's stage doubles as the output's staging buffer: wait until the last tile's output left.
    shared_storage.barrier_O.wait((work_idx + 1) % 2);
    for (; kv_tile_idx > swa_begin_kv_tile_idx; --kv_tile_idx) {
      load_k(kv_tile_idx - 1);
      load_v(kv_tile_idx);
    }
    scheduler.prefetch_next_work(scheduler_params, work_tile_info);
    load_v(kv_tile_idx);
    scheduler.broadcast_next_work(work_tile_info);
  }
};

}  // namespace fk::ops::attn::sm90
