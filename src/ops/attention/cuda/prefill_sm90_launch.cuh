// FlashInfer's Hopper paged prefill for one head dim: fills its parameter struct from a
// Sm90PrefillLaunch and dispatches dtype x causal x variant (12 kernels per head dim), each
// with two KV mainloops: TMA boxes per page (paged_tma_mainloop.cuh) where the page size
// allows, FlashInfer's cp.async gather otherwise.
// Included by prefill_sm90_hd{64,128,256}.cu only.
#pragma once
#include "ops/attention/cuda/flashinfer_sm90_compat.cuh"  // first: before any FlashInfer header

#include <flashinfer/attention/hopper/default_params.cuh>
#include <flashinfer/attention/hopper/prefill_sm90.cuh>
#include <flashinfer/attention/hopper/variants.cuh>

#include "ops/attention/cuda/attention_kernels.h"
#include "ops/attention/cuda/paged_tma_prefill.cuh"
#include "ops/common/env_switch.h"

namespace fk::ops::attn::sm90 {

// A left window wider than any sequence (< 2^30 tokens): the windowed kernels then mask
// nothing, and the mask arithmetic (positions minus window) stays far from overflow.
inline constexpr int32_t kNoWindow = 1 << 30;

template <class DType>
using PagedParams = flashinfer::BatchPrefillPagedParams<DType, DType, DType, int32_t>;

// The TMA mainloop for pages of >= 64 tokens that fit its tile (FK_PREFILL_PAGED_TMA=0:
// never, for A/B runs). 16k causal tokens at D = 128 (bench/results/h100/attention_prefill_tma.json):
// pages of 128 tokens 578 TFLOP/s against 521 with the cp.async gather, 64 tokens 543
// against 522; but pages of 16 only 419 against 526: a TMA box of 16 rows x 128 bytes is
// too small a request for the copy engine to keep up (16 boxes a tile).
inline constexpr int kPagedTmaMinPageSize = 64;

template <uint32_t kHeadDim>
bool use_paged_tma(int page_size) {
  static const bool enabled = env_switch_on("FK_PREFILL_PAGED_TMA");
  return enabled && page_size >= kPagedTmaMinPageSize && paged_tma_supports(page_size, PagedTmaTile<kHeadDim>::kv);
}

template <uint32_t kHeadDim, class DType, bool kCausal, bool kWindow, class AttentionVariant>
cudaError_t launch(const Sm90PrefillLaunch& l, cudaStream_t stream) {
  PagedParams<DType> p{};
  p.q_ptr = static_cast<DType*>(const_cast<void*>(l.q));
  p.k_ptr = static_cast<DType*>(const_cast<void*>(l.k_cache));
  p.v_ptr = static_cast<DType*>(const_cast<void*>(l.v_cache));
  p.o_ptr = static_cast<DType*>(l.out);
  p.lse_ptr = l.lse;
  p.qo_tile_indices = l.qo_tile_indices;
  p.qo_indptr = l.qo_indptr;
  p.kv_indptr = l.kv_indptr;
  p.kv_indices = const_cast<int32_t*>(l.kv_indices);
  p.qo_lens = l.qo_lens;
  p.kv_lens = l.kv_lens;
  p.head_indices = l.head_indices;
  p.work_indptr = l.work_indptr;
  p.batch_indices = l.batch_indices;
  p.additional_params.logits_soft_cap = l.logits_soft_cap;
  p.additional_params.sm_scale = l.sm_scale;
  p.q_stride_n = l.q_stride_n;
  p.q_stride_h = l.q_stride_h;
  p.o_stride_n = static_cast<int64_t>(l.num_qo_heads) * kHeadDim;  // out is contiguous
  p.o_stride_h = kHeadDim;
  // Cache [P, page_size, Hk, D], contiguous; K and V share strides (the kernel assumes it).
  p.k_stride_n = p.v_stride_n = static_cast<int64_t>(l.num_kv_heads) * kHeadDim;
  p.k_stride_h = p.v_stride_h = kHeadDim;
  p.k_page_stride = p.v_page_stride = static_cast<int64_t>(l.page_size) * l.num_kv_heads * kHeadDim;
  p.nnz_qo = l.num_q_tokens;
  p.num_qo_heads = l.num_qo_heads;
  p.num_kv_heads = l.num_kv_heads;
  p.group_size = l.num_qo_heads / l.num_kv_heads;
  p.page_size = l.page_size;
  p.window_left = kWindow ? (l.window_left >= 0 ? l.window_left : kNoWindow) : -1;
  p.causal = kCausal;
  if (use_paged_tma<kHeadDim>(l.page_size))
    return launch_paged_tma<kHeadDim, DType, kCausal, kWindow, AttentionVariant>(p, l.num_pages, stream);
  constexpr auto kMask = kCausal ? flashinfer::MaskMode::kCausal : flashinfer::MaskMode::kNone;
  return flashinfer::BatchPrefillWithPagedKVCacheDispatched<kHeadDim, kHeadDim, kMask, kWindow,
                                                            /*SAME_SCHEDULE_FOR_ALL_HEADS=*/false,
                                                            AttentionVariant>(p, /*enable_pdl=*/false, stream);
}

template <uint32_t kHeadDim, class DType, bool kCausal>
cudaError_t dispatch_variant(const Sm90PrefillLaunch& l, cudaStream_t stream) {
  switch (l.variant) {
    case Variant::plain: return launch<kHeadDim, DType, kCausal, false, flashinfer::StandardAttention>(l, stream);
    case Variant::window: return launch<kHeadDim, DType, kCausal, true, flashinfer::StandardAttention>(l, stream);
    case Variant::soft_cap: return launch<kHeadDim, DType, kCausal, true, flashinfer::LogitsSoftCap>(l, stream);
  }
  return cudaErrorInvalidValue;
}

template <uint32_t kHeadDim, class DType>
cudaError_t dispatch_mask(const Sm90PrefillLaunch& l, cudaStream_t stream) {
  return l.causal ? dispatch_variant<kHeadDim, DType, true>(l, stream)
                  : dispatch_variant<kHeadDim, DType, false>(l, stream);
}

template <uint32_t kHeadDim>
cudaError_t prefill(const Sm90PrefillLaunch& l, cudaStream_t stream) {
  return l.dtype == KvDType::bf16 ? dispatch_mask<kHeadDim, cutlass::bfloat16_t>(l, stream)
                                  : dispatch_mask<kHeadDim, cutlass::half_t>(l, stream);
}

}  // namespace fk::ops::attn::sm90
