// The seam between the ops' CUDA entry points (paged_attention_cuda.cu: validation,
// plan bookkeeping) and the translation units that instantiate FlashInfer's kernels, one
// per head dim so that they compile in parallel. No FlashInfer type crosses it: FlashInfer's
// FA2 and Hopper headers cannot share a translation unit (both define
// flashinfer::AttentionVariantBase, BatchPrefillPagedParams, ...).
//
// Kernels used:
//   prefill (and decode whose GQA group size the decode kernels lack): FlashInfer's
//     Hopper FA3-style paged prefill (flashinfer/attention/hopper/prefill_sm90.cuh),
//     scheduled by PrefillSM90Plan;
//   decode: FlashInfer's CUDA-core paged decode (flashinfer/attention/decode.cuh),
//     scheduled by DecodePlan, with split-KV partial results merged by its cascade kernel.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace fk::ops::attn {

enum class KvDType : int32_t { f16 = 0, bf16 = 1 };

// The attention variant, a template parameter of the kernels. Three per kernel keep the
// instantiation count low: a window of -1 and a window wider than any sequence are the
// same mask, so the soft-cap variant also serves soft-cap without a window.
enum class Variant : int32_t {
  plain = 0,     // no window, no soft-cap
  window = 1,    // sliding window, no soft-cap
  soft_cap = 2,  // soft-cap, with or without a window
};

inline Variant choose_variant(float logits_soft_cap, int32_t window_left) {
  if (logits_soft_cap > 0) return Variant::soft_cap;
  return window_left >= 0 ? Variant::window : Variant::plain;
}

// ---- Hopper prefill ---------------------------------------------------------------------
struct Sm90PrefillLaunch {
  KvDType dtype;
  Variant variant;
  bool causal;
  const void* q;  // [num_q_tokens, Hq, D]
  int64_t q_stride_n, q_stride_h;
  const void* k_cache;  // [P, page_size, Hk, D], contiguous
  const void* v_cache;
  int64_t num_pages;  // P
  const int32_t* kv_indices;
  void* out;  // [num_q_tokens, Hq, D]
  int64_t out_stride_n, out_stride_h;  // 0, 0: contiguous
  float* lse;  // [num_q_tokens, Hq] or nullptr
  int64_t num_q_tokens;
  int32_t num_qo_heads, num_kv_heads, page_size;
  int32_t window_left;  // -1 = none
  float sm_scale, logits_soft_cap;
  // PrefillSM90Plan's schedule: device pointers into int_workspace.
  int32_t *qo_tile_indices, *qo_indptr, *kv_indptr, *qo_lens, *kv_lens, *head_indices, *work_indptr,
      *batch_indices;
  bool paged_tma;  // the TMA mainloop where the page size allows (false: the op's variant no_paged_tma)
};

cudaError_t prefill_sm90_hd64(const Sm90PrefillLaunch& l, cudaStream_t stream);
cudaError_t prefill_sm90_hd128(const Sm90PrefillLaunch& l, cudaStream_t stream);
cudaError_t prefill_sm90_hd256(const Sm90PrefillLaunch& l, cudaStream_t stream);

// The contiguous-KV path (contiguous_kv_policy.h): the batch's pages copied out of the
// caches by gather_kv_pages into head-major K and V [Hk, rows, D], rows = pages *
// page_size, page entry s of kv_indices at rows [s * page_size, (s + 1) * page_size); then
// FlashInfer's ragged Hopper kernel over them, its schedule's kv_indptr in rows
// (kv_indptr[b] * page_size). Head dim 128 only.
struct Sm90ContiguousKv {
  const void* k;
  const void* v;
  int64_t rows;
};

cudaError_t prefill_sm90_contiguous_hd128(const Sm90PrefillLaunch& l, const Sm90ContiguousKv& kv,
                                          cudaStream_t stream);

struct GatherKvPages {
  const void* k_cache;  // [P, page_size, Hk, D], 16-bit, contiguous
  const void* v_cache;
  const int32_t* kv_indptr;         // [batch + 1] (device), in pages
  const int32_t* kv_indices;        // (device)
  const int32_t* kv_last_page_len;  // [batch] (device)
  int32_t batch, page_size, num_kv_heads, head_dim;
  int64_t rows;  // kv_indptr[batch] * page_size, from the host mirror
  void* k_out;   // [Hk, rows, D]
  void* v_out;
};

// Rows past a sequence's last token (the tail of its last page) are written as zeros: the
// kernel reads them inside its last tile, and a stale NaN there would reach the output
// through a probability of 0 times V.
cudaError_t gather_kv_pages(const GatherKvPages& g, cudaStream_t stream);

// ---- CUDA-core decode -------------------------------------------------------------------
// FlashInfer's DecodePlanInfo, as its ToVector() values.
inline constexpr int kDecodePlanInfoLen = 10;

// GQA group sizes the decode kernels are instantiated for (FlashInfer's dispatch set).
inline bool decode_kernel_supports_group(int64_t group) {
  return group == 1 || group == 2 || group == 3 || group == 4 || group == 6 || group == 8 || group == 16;
}

struct DecodePlanRequest {
  KvDType dtype;
  Variant variant;
  int32_t* kv_indptr_host;  // [batch + 1]
  int32_t batch, num_qo_heads, num_kv_heads, page_size;
  int32_t graph_grid;  // 0: eager; k >= 1: graph-mode plan of grid class k (fk/ops/attention.h)
  void* float_workspace;
  size_t float_bytes;
  void* int_workspace;
  void* host_int_workspace;
  size_t int_bytes;
  int64_t* plan_out;  // [kDecodePlanInfoLen]
};

struct DecodeLaunch {
  KvDType dtype;
  Variant variant;
  const void* q;  // [batch, Hq, D]
  int64_t q_stride_n, q_stride_h;
  const void* k_cache;
  const void* v_cache;
  const int32_t* kv_indptr;
  const int32_t* kv_indices;
  const int32_t* kv_last_page_len;
  int32_t batch, num_qo_heads, num_kv_heads, page_size;
  void* out;   // [batch, Hq, D], contiguous
  float* lse;  // [batch, Hq] or nullptr
  int32_t window_left;
  float sm_scale, logits_soft_cap;
  void* float_workspace;
  void* int_workspace;
  const int64_t* plan;  // [kDecodePlanInfoLen] from the plan
};

cudaError_t decode_plan_hd64(const DecodePlanRequest& r, cudaStream_t stream);
cudaError_t decode_plan_hd128(const DecodePlanRequest& r, cudaStream_t stream);
cudaError_t decode_plan_hd256(const DecodePlanRequest& r, cudaStream_t stream);
cudaError_t decode_run_hd64(const DecodeLaunch& l, cudaStream_t stream);
cudaError_t decode_run_hd128(const DecodeLaunch& l, cudaStream_t stream);
cudaError_t decode_run_hd256(const DecodeLaunch& l, cudaStream_t stream);

}  // namespace fk::ops::attn
