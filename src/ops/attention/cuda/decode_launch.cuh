// FlashInfer's CUDA-core paged decode for one head dim: plan (work partitioning, which
// queries the kernel's occupancy, so it lives with the kernel) and run, dispatched over
// dtype x variant (3 variants; FlashInfer's launcher adds the GQA group sizes).
// Included by decode_hd{64,128,256}.cu only.
#pragma once
#include "ops/attention/cuda/flashinfer_compat.cuh"  // first: before any FlashInfer header

#include <flashinfer/attention/decode.cuh>
#include <flashinfer/attention/default_decode_params.cuh>
#include <flashinfer/attention/scheduler.cuh>
#include <flashinfer/attention/variants.cuh>
#include <tuple>
#include <vector>

#include "fk/cuda/pdl.cuh"

#include "fk/ops/attention.h"
#include "fk/status.h"
#include "ops/attention/cuda/attention_kernels.h"

namespace fk::ops::attn::decode {

template <class DType>
using Params = flashinfer::BatchDecodeParams<DType, DType, DType, int32_t>;

// DefaultAttention<custom mask, sliding window, soft-cap, alibi>. The windowed variants
// treat window_left = -1 as no window.
template <Variant V>
using AttentionOf = flashinfer::DefaultAttention<false, V != Variant::plain, V == Variant::soft_cap, false>;

constexpr auto kNoRope = flashinfer::PosEncodingMode::kNone;

// A graph-mode plan (cuda_graph = k >= 1) pads the split-KV grid to a size fixed per batch
// size. FlashInfer pads to every CTA the device can hold (grid class 1); classes 2 and 3
// cap the grid at kDecodeGraphCtasPerSm[k] CTAs per SM and split the KV again under that
// cap (FlashInfer's partition: the shortest chunk of at least kDecodeMinChunkTokens that fits).
inline cudaError_t bound_graph_grid(int32_t grid_class, bool split_kv, uint32_t& max_grid_size,
                                    uint32_t& pages_per_chunk, uint32_t& new_batch_size, uint32_t gdy,
                                    uint32_t batch_size, const int32_t* indptr_h, uint32_t page_size) {
  if (!split_kv || grid_class <= 1) return cudaSuccess;
  int dev = 0, sms = 0;
  if (cudaError_t e = cudaGetDevice(&dev); e != cudaSuccess) return e;
  if (cudaError_t e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev); e != cudaSuccess) return e;
  const auto budget = static_cast<uint32_t>(ops::decode_graph_grid_ctas(grid_class, sms, batch_size, gdy));
  if (budget >= max_grid_size) return cudaSuccess;
  std::vector<int32_t> num_pages(batch_size);
  for (uint32_t b = 0; b < batch_size; ++b) num_pages[b] = indptr_h[b + 1] - indptr_h[b];
  const auto min_pages = std::max(static_cast<uint32_t>(ops::kDecodeMinChunkTokens) / page_size, 1U);
  std::tie(pages_per_chunk, new_batch_size) =
      flashinfer::PartitionPagedKVCacheBinarySearchMinNumPagePerBatch(budget, gdy, num_pages, min_pages);
  max_grid_size = budget;  // the graph-mode plan pads the grid to max_grid_size / gdy chunks
  return cudaSuccess;
}

template <uint32_t kHeadDim, class DType, class AV>
cudaError_t plan(const DecodePlanRequest& r, cudaStream_t stream) {
  using P = Params<DType>;
  flashinfer::DecodePlanInfo info;
  cudaError_t status = cudaErrorInvalidValue;
  DISPATCH_GQA_GROUP_SIZE(r.num_qo_heads / r.num_kv_heads, GROUP_SIZE, {
    auto flashinfer_estimation =
        flashinfer::BatchDecodeWithPagedKVCacheWorkEstimationDispatched<GROUP_SIZE, kHeadDim, kNoRope, AV, P>;
    auto work_estimation = [&](bool& split_kv, uint32_t& max_grid_size, uint32_t& pages_per_chunk,
                               uint32_t& new_batch_size, uint32_t& gdy, uint32_t batch_size, int32_t* indptr_h,
                               uint32_t num_qo_heads, uint32_t page_size, bool graph, cudaStream_t s) {
      cudaError_t st = flashinfer_estimation(split_kv, max_grid_size, pages_per_chunk, new_batch_size, gdy,
                                             batch_size, indptr_h, num_qo_heads, page_size, graph, s);
      if (st != cudaSuccess || !graph) return st;
      return bound_graph_grid(r.graph_grid, split_kv, max_grid_size, pages_per_chunk, new_batch_size, gdy,
                              batch_size, indptr_h, page_size);
    };
    status = flashinfer::DecodePlan<kHeadDim, kNoRope, AV, P>(
        r.float_workspace, r.float_bytes, r.int_workspace, r.host_int_workspace, r.int_bytes, info,
        r.kv_indptr_host, static_cast<uint32_t>(r.batch), static_cast<uint32_t>(r.num_qo_heads),
        static_cast<uint32_t>(r.page_size), r.graph_grid > 0, stream, work_estimation);
  });
  const std::vector<int64_t> v = info.ToVector();
  for (int i = 0; i < kDecodePlanInfoLen; ++i) r.plan_out[i] = v[i];
  return status;
}

template <uint32_t kHeadDim, class DType, class AV>
cudaError_t run(const DecodeLaunch& l, cudaStream_t stream) {
  flashinfer::DecodePlanInfo info;
  info.FromVector(std::vector<int64_t>(l.plan, l.plan + kDecodePlanInfoLen));
  auto* k = static_cast<DType*>(const_cast<void*>(l.k_cache));
  auto* v = static_cast<DType*>(const_cast<void*>(l.v_cache));
  flashinfer::paged_kv_t<DType, int32_t> paged_kv(
      static_cast<uint32_t>(l.num_kv_heads), static_cast<uint32_t>(l.page_size), kHeadDim,
      static_cast<uint32_t>(l.batch), flashinfer::QKVLayout::kNHD, k, v, const_cast<int32_t*>(l.kv_indices),
      const_cast<int32_t*>(l.kv_indptr), const_cast<int32_t*>(l.kv_last_page_len));
  Params<DType> p(static_cast<DType*>(const_cast<void*>(l.q)), /*q_rope_offset=*/nullptr, paged_kv,
                  static_cast<DType*>(l.out), l.lse, /*maybe_alibi_slopes=*/nullptr,
                  static_cast<uint32_t>(l.num_qo_heads), static_cast<int32_t>(l.q_stride_n),
                  static_cast<int32_t>(l.q_stride_h), l.window_left, l.logits_soft_cap, l.sm_scale,
                  /*rope_scale=*/1.f, /*rope_theta=*/1e4f);
  char* int_ws = static_cast<char*>(l.int_workspace);
  char* float_ws = static_cast<char*>(l.float_workspace);
  p.request_indices = reinterpret_cast<int32_t*>(int_ws + info.request_indices_offset);
  p.kv_tile_indices = reinterpret_cast<int32_t*>(int_ws + info.kv_tile_indices_offset);
  p.o_indptr = reinterpret_cast<int32_t*>(int_ws + info.o_indptr_offset);
  p.kv_chunk_size_ptr = reinterpret_cast<int32_t*>(int_ws + info.kv_chunk_size_ptr_offset);
  p.padded_batch_size = static_cast<uint32_t>(info.padded_batch_size);
  DType* tmp_v = nullptr;  // split-KV partial outputs (in the output dtype) and their lse
  float* tmp_s = nullptr;
  if (info.split_kv) {
    tmp_v = reinterpret_cast<DType*>(float_ws + info.v_offset);
    tmp_s = reinterpret_cast<float*>(float_ws + info.s_offset);
    if (info.enable_cuda_graph) p.block_valid_mask = reinterpret_cast<bool*>(int_ws + info.block_valid_mask_offset);
  }
  return flashinfer::BatchDecodeWithPagedKVCacheDispatched<kHeadDim, kNoRope, AV>(p, tmp_v, tmp_s,
                                                                                 /*enable_pdl=*/fk::cuda::pdl_enabled(), stream);
}

template <uint32_t kHeadDim, class DType>
cudaError_t plan_variant(const DecodePlanRequest& r, cudaStream_t stream) {
  switch (r.variant) {
    case Variant::plain: return plan<kHeadDim, DType, AttentionOf<Variant::plain>>(r, stream);
    case Variant::window: return plan<kHeadDim, DType, AttentionOf<Variant::window>>(r, stream);
    case Variant::soft_cap: return plan<kHeadDim, DType, AttentionOf<Variant::soft_cap>>(r, stream);
  }
  return cudaErrorInvalidValue;
}

template <uint32_t kHeadDim, class DType>
cudaError_t run_variant(const DecodeLaunch& l, cudaStream_t stream) {
  switch (l.variant) {
    case Variant::plain: return run<kHeadDim, DType, AttentionOf<Variant::plain>>(l, stream);
    case Variant::window: return run<kHeadDim, DType, AttentionOf<Variant::window>>(l, stream);
    case Variant::soft_cap: return run<kHeadDim, DType, AttentionOf<Variant::soft_cap>>(l, stream);
  }
  return cudaErrorInvalidValue;
}

#ifdef FK_KERNEL_SUBSET
// A compile-check build (FK_KERNEL_SUBSET, no GPU runs it) instantiates bf16 without a
// window or soft-cap only.
inline void require_subset(KvDType dtype, Variant variant) {
  FK_CHECK(dtype == KvDType::bf16 && variant == Variant::plain,
           "paged decode: this build compiles only the bf16 kernels without a window or soft-cap "
           "(FK_KERNEL_SUBSET, for machines without a GPU); configure with -DFK_KERNEL_SUBSET=OFF to run this call");
}

template <uint32_t kHeadDim>
cudaError_t plan_any(const DecodePlanRequest& r, cudaStream_t stream) {
  require_subset(r.dtype, r.variant);
  return plan<kHeadDim, nv_bfloat16, AttentionOf<Variant::plain>>(r, stream);
}

template <uint32_t kHeadDim>
cudaError_t run_any(const DecodeLaunch& l, cudaStream_t stream) {
  require_subset(l.dtype, l.variant);
  return run<kHeadDim, nv_bfloat16, AttentionOf<Variant::plain>>(l, stream);
}
#else
template <uint32_t kHeadDim>
cudaError_t plan_any(const DecodePlanRequest& r, cudaStream_t stream) {
  return r.dtype == KvDType::bf16 ? plan_variant<kHeadDim, nv_bfloat16>(r, stream)
                                  : plan_variant<kHeadDim, half>(r, stream);
}

template <uint32_t kHeadDim>
cudaError_t run_any(const DecodeLaunch& l, cudaStream_t stream) {
  return l.dtype == KvDType::bf16 ? run_variant<kHeadDim, nv_bfloat16>(l, stream)
                                  : run_variant<kHeadDim, half>(l, stream);
}
#endif

}  // namespace fk::ops::attn::decode
