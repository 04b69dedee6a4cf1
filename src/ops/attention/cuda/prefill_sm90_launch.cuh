// FlashInfer's Hopper prefill for one head dim: fills its parameter struct from a
// Sm90PrefillLaunch and dispatches dtype x causal x variant (12 kernels per head dim).
// Paged KV (prefill): two KV mainloops, TMA boxes per page (paged_tma_mainloop.cuh) where
// the page size allows, FlashInfer's cp.async gather otherwise. Contiguous KV
// (prefill_contiguous): FlashInfer's ragged kernel over a copy of the pages.
// Included by prefill_sm90_hd{64,128,256}.cu and prefill_sm90_contiguous_hd128.cu only.
#pragma once
#include "ops/attention/cuda/flashinfer_sm90_compat.cuh"  // first: before any FlashInfer header

#include <flashinfer/attention/hopper/default_params.cuh>
#include <flashinfer/attention/hopper/prefill_sm90.cuh>
#include <flashinfer/attention/hopper/variants.cuh>

#include "fk/status.h"
#include "ops/attention/contiguous_kv_policy.h"
#include "ops/attention/cuda/attention_kernels.h"
#include "ops/attention/cuda/paged_tma_prefill.cuh"

namespace fk::ops::attn::sm90 {

// A left window wider than any sequence (< 2^30 tokens): the windowed kernels then mask
// nothing, and the mask arithmetic (positions minus window) stays far from overflow.
inline constexpr int32_t kNoWindow = 1 << 30;

template <class DType>
using PagedParams = flashinfer::BatchPrefillPagedParams<DType, DType, DType, int32_t>;

// The TMA mainloop for pages of at least kPagedTmaMinPageSize (64) tokens that fit its
// tile, unless the op's variant no_paged_tma is selected. 16k causal tokens at D = 128
// (bench/results/h100/attention_prefill_tma.json): pages of 128 tokens 578 TFLOP/s against
// 521 with the cp.async gather, 64 tokens 543 against 522; but pages of 16 only 419 against
// 526: a TMA box of 16 rows x 128 bytes is too small a request for the copy engine to keep
// up (16 boxes a tile). Smaller pages take the contiguous-KV path where it pays.

template <uint32_t kHeadDim>
bool use_paged_tma(const Sm90PrefillLaunch& l) {
  const int page_size = l.page_size;
  return l.paged_tma && page_size >= kPagedTmaMinPageSize && paged_tma_supports(page_size, PagedTmaTile<kHeadDim>::kv);
}

// The fields FlashInfer's paged and ragged parameter structs share: q, out, lse, the
// schedule, the heads and the variant's parameters.
template <uint32_t kHeadDim, class Params>
void fill_common(Params& p, const Sm90PrefillLaunch& l, bool causal, bool window) {
  using DType = typename Params::DTypeQ;
  p.q_ptr = static_cast<DType*>(const_cast<void*>(l.q));
  p.o_ptr = static_cast<DType*>(l.out);
  p.lse_ptr = l.lse;
  p.qo_tile_indices = l.qo_tile_indices;
  p.qo_indptr = l.qo_indptr;
  p.kv_indptr = l.kv_indptr;
  p.qo_lens = l.qo_lens;
  p.kv_lens = l.kv_lens;
  p.head_indices = l.head_indices;
  p.work_indptr = l.work_indptr;
  p.batch_indices = l.batch_indices;
  p.additional_params.logits_soft_cap = l.logits_soft_cap;
  p.additional_params.sm_scale = l.sm_scale;
  p.q_stride_n = l.q_stride_n;
  p.q_stride_h = l.q_stride_h;
  p.o_stride_n = l.out_stride_n != 0 ? l.out_stride_n : static_cast<int64_t>(l.num_qo_heads) * kHeadDim;
  p.o_stride_h = l.out_stride_h != 0 ? l.out_stride_h : kHeadDim;
  p.nnz_qo = l.num_q_tokens;
  p.num_qo_heads = l.num_qo_heads;
  p.num_kv_heads = l.num_kv_heads;
  p.group_size = l.num_qo_heads / l.num_kv_heads;
  p.window_left = window ? (l.window_left >= 0 ? l.window_left : kNoWindow) : -1;
  p.causal = causal;
}

template <uint32_t kHeadDim, class DType, bool kCausal, bool kWindow, class AttentionVariant>
cudaError_t launch(const Sm90PrefillLaunch& l, cudaStream_t stream) {
  PagedParams<DType> p{};
  fill_common<kHeadDim>(p, l, kCausal, kWindow);
  p.k_ptr = static_cast<DType*>(const_cast<void*>(l.k_cache));
  p.v_ptr = static_cast<DType*>(const_cast<void*>(l.v_cache));
  p.kv_indices = const_cast<int32_t*>(l.kv_indices);
  // Cache [P, page_size, Hk, D], contiguous; K and V share strides (the kernel assumes it).
  p.k_stride_n = p.v_stride_n = static_cast<int64_t>(l.num_kv_heads) * kHeadDim;
  p.k_stride_h = p.v_stride_h = kHeadDim;
  p.k_page_stride = p.v_page_stride = static_cast<int64_t>(l.page_size) * l.num_kv_heads * kHeadDim;
  p.page_size = l.page_size;
  if (use_paged_tma<kHeadDim>(l))
    return launch_paged_tma<kHeadDim, DType, kCausal, kWindow, AttentionVariant>(p, l.num_pages, stream);
  constexpr auto kMask = kCausal ? flashinfer::MaskMode::kCausal : flashinfer::MaskMode::kNone;
  return flashinfer::BatchPrefillWithPagedKVCacheDispatched<kHeadDim, kHeadDim, kMask, kWindow,
                                                            /*SAME_SCHEDULE_FOR_ALL_HEADS=*/false,
                                                            AttentionVariant>(p, /*enable_pdl=*/false, stream);
}

// FlashInfer's ragged (contiguous KV) kernel over the copy of the batch's pages: K and V
// [Hk, rows, D] head-major, sequence b's rows starting at the schedule's kv_indptr[b].
template <uint32_t kHeadDim, class DType, bool kCausal, bool kWindow, class AttentionVariant>
cudaError_t launch_contiguous(const Sm90PrefillLaunch& l, const Sm90ContiguousKv& kv, cudaStream_t stream) {
  flashinfer::BatchPrefillRaggedParams<DType, DType, DType, int32_t> p{};
  fill_common<kHeadDim>(p, l, kCausal, kWindow);
  p.k_ptr = static_cast<DType*>(const_cast<void*>(kv.k));
  p.v_ptr = static_cast<DType*>(const_cast<void*>(kv.v));
  p.nnz_kv = kv.rows;
  p.k_stride_n = p.v_stride_n = kHeadDim;
  p.k_stride_h = p.v_stride_h = kv.rows * kHeadDim;
  constexpr auto kMask = kCausal ? flashinfer::MaskMode::kCausal : flashinfer::MaskMode::kNone;
  return flashinfer::BatchPrefillWithRaggedKVCacheDispatched<kHeadDim, kHeadDim, kMask, kWindow,
                                                             /*SAME_SCHEDULE_FOR_ALL_HEADS=*/false,
                                                             AttentionVariant>(p, /*enable_pdl=*/false, stream);
}

// Calls launcher.template operator()<DType, kCausal, kWindow, AttentionVariant>() for the
// launch's dtype, mask and variant: 12 instantiations.
template <class Launcher>
cudaError_t dispatch(const Sm90PrefillLaunch& l, Launcher&& launcher) {
#ifdef FK_KERNEL_SUBSET
  // A compile-check build (FK_KERNEL_SUBSET): bf16, no window or soft-cap, both masks.
  FK_CHECK(l.dtype == KvDType::bf16 && l.variant == Variant::plain,
           "Hopper prefill: this build compiles only the bf16 kernels without a window or soft-cap "
           "(FK_KERNEL_SUBSET, for machines without a GPU); configure with -DFK_KERNEL_SUBSET=OFF to run this call");
  return l.causal ? launcher.template operator()<cutlass::bfloat16_t, true, false, flashinfer::StandardAttention>()
                  : launcher.template operator()<cutlass::bfloat16_t, false, false, flashinfer::StandardAttention>();
#else
  auto variant = [&]<class DType, bool kCausal>() -> cudaError_t {
    switch (l.variant) {
      case Variant::plain:
        return launcher.template operator()<DType, kCausal, false, flashinfer::StandardAttention>();
      case Variant::window:
        return launcher.template operator()<DType, kCausal, true, flashinfer::StandardAttention>();
      case Variant::soft_cap:
        return launcher.template operator()<DType, kCausal, true, flashinfer::LogitsSoftCap>();
    }
    return cudaErrorInvalidValue;
  };
  auto mask = [&]<class DType>() {
    return l.causal ? variant.template operator()<DType, true>() : variant.template operator()<DType, false>();
  };
  return l.dtype == KvDType::bf16 ? mask.template operator()<cutlass::bfloat16_t>()
                                  : mask.template operator()<cutlass::half_t>();
#endif
}

template <uint32_t kHeadDim>
cudaError_t prefill(const Sm90PrefillLaunch& l, cudaStream_t stream) {
  return dispatch(l, [&]<class DType, bool kCausal, bool kWindow, class AttentionVariant>() {
    return launch<kHeadDim, DType, kCausal, kWindow, AttentionVariant>(l, stream);
  });
}

template <uint32_t kHeadDim>
cudaError_t prefill_contiguous(const Sm90PrefillLaunch& l, const Sm90ContiguousKv& kv, cudaStream_t stream) {
  return dispatch(l, [&]<class DType, bool kCausal, bool kWindow, class AttentionVariant>() {
    return launch_contiguous<kHeadDim, DType, kCausal, kWindow, AttentionVariant>(l, kv, stream);
  });
}

}  // namespace fk::ops::attn::sm90
