// Host side of the paged-TMA prefill (paged_tma_mainloop.cuh): the cache's tensor maps and
// the launch of FlashInfer's PrefillWithKVCacheKernel with the TMA mainloop, its epilogue
// and its persistent scheduler, fed by PrefillSM90Plan's schedule as before.
// Included by prefill_sm90_launch.cuh only.
#pragma once
#include <flashinfer/attention/hopper/default_params.cuh>
#include <flashinfer/attention/hopper/epilogue.cuh>
#include <flashinfer/attention/hopper/kernel_traits.cuh>
#include <flashinfer/attention/hopper/prefill_sm90.cuh>
#include <flashinfer/attention/hopper/tile_scheduler.cuh>

#include "fk/cuda/sm_count.h"
#include "fk/cuda/tensor_map.cuh"
#include "ops/attention/cuda/paged_tma_mainloop.cuh"

namespace fk::ops::attn::sm90 {

// The query and KV tile of the TMA path per head dim: those of FlashInfer's ragged kernel
// for causal masks (the KV tile then holds whole 16-token pages or lies in one big page).
template <uint32_t kHeadDim>
struct PagedTmaTile {
  static constexpr int q = kHeadDim == 64 ? 192 : 128;
  static constexpr int kv = kHeadDim == 256 ? 64 : 128;
};

// A 4-d map over a cache [P, page_size, Hk, D] (16-bit): dims (D, row in page, head, page),
// boxes of 64 columns x box_rows rows, 128-byte swizzle (what the shared layout expects).
inline cudaError_t make_paged_kv_map(CUtensorMap& out, const void* cache, int64_t num_pages, int page_size,
                                     int num_kv_heads, int head_dim, int box_rows) {
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(head_dim), static_cast<cuuint64_t>(page_size),
                              static_cast<cuuint64_t>(num_kv_heads), static_cast<cuuint64_t>(num_pages)};
  const cuuint64_t row_bytes = static_cast<cuuint64_t>(num_kv_heads) * head_dim * 2;
  const cuuint64_t strides[3] = {row_bytes, static_cast<cuuint64_t>(head_dim) * 2, row_bytes * page_size};
  const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(box_rows), 1, 1};
  const CUresult r = fk::cuda::encode_tensor_map_16bit_sw128(out, cache, 4, dims, strides, box);
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}

template <uint32_t kHeadDim, class DType, bool kCausal, bool kWindow, class AttentionVariant, class Params>
cudaError_t launch_paged_tma(Params& p, int64_t num_pages, cudaStream_t stream) {
  using Traits =
      flashinfer::AttentionKernelTraits</*USE_TMA_LOAD_KV=*/true, kHeadDim, kHeadDim, PagedTmaTile<kHeadDim>::q,
                                        PagedTmaTile<kHeadDim>::kv, /*NUM_STAGES_=*/2, DType, DType, DType, int32_t,
                                        AttentionVariant>;
  using Mainloop = PagedTmaMainloop<typename Params::AdditionalParams, Traits, kCausal>;
  using Epilogue = flashinfer::CollectiveEpilogue<Traits>;
  using Scheduler = flashinfer::BatchPrefillPersistentTileScheduler<int32_t>;

  typename Mainloop::Arguments ma{};
  ma.Q_ptr = p.q_ptr;
  ma.layout_Q = flashinfer::get_gmem_layout(p.nnz_qo, p.num_qo_heads, kHeadDim, p.q_stride_n, p.q_stride_h);
  const int box_rows = p.page_size < Traits::CTA_KV ? p.page_size : Traits::CTA_KV;
  cudaError_t st = make_paged_kv_map(ma.k_map, p.k_ptr, num_pages, p.page_size, p.num_kv_heads, kHeadDim, box_rows);
  if (st != cudaSuccess) return st;
  st = make_paged_kv_map(ma.v_map, p.v_ptr, num_pages, p.page_size, p.num_kv_heads, kHeadDim, box_rows);
  if (st != cudaSuccess) return st;
  ma.V_ptr = p.v_ptr;
  ma.kv_indices = p.kv_indices;
  ma.page_stride = p.k_page_stride;
  ma.row_stride = p.k_stride_n;
  ma.page_size = p.page_size;
  ma.num_pages = static_cast<int>(num_pages);
  ma.window_left = p.window_left;
  ma.additional_params = p.additional_params;
  typename Mainloop::Params mainloop_params = Mainloop::to_underlying_arguments(ma);
  typename Epilogue::Params epilogue_params = Epilogue::to_underlying_arguments({
      p.o_ptr,
      flashinfer::get_gmem_layout(p.nnz_qo, p.num_qo_heads, kHeadDim, p.o_stride_n, p.o_stride_h),
      p.lse_ptr,
      flashinfer::get_lse_gmem_layout(p.nnz_qo, p.num_qo_heads),
  });
  typename Scheduler::Arguments scheduler_args = {
      p.work_indptr, p.head_indices, p.qo_tile_indices, p.qo_indptr, p.kv_indptr, p.qo_lens, p.kv_lens,
      p.batch_indices, cutlass::FastDivmod(p.num_qo_heads / p.num_kv_heads), p.num_qo_heads};
  typename Scheduler::Params scheduler_params = Scheduler::to_underlying_arguments(scheduler_args);

  auto kernel = flashinfer::PrefillWithKVCacheKernel<Mainloop, Epilogue, Traits, kWindow, kCausal, Scheduler>;
  const int smem = static_cast<int>(sizeof(typename Traits::SharedStorage));
  st = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (st != cudaSuccess) return st;
  void* args[] = {&mainloop_params, &epilogue_params, &scheduler_params};
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel),
                          Scheduler::get_grid_dim(scheduler_args, fk::cuda::current_sm_count()),
                          dim3(Traits::NUM_WARPS * 32), args, smem, stream);
}

}  // namespace fk::ops::attn::sm90
