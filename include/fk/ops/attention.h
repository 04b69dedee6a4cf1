// Attention over a paged KV cache (dense LLM serving), FlashInfer conventions.
//
// Shapes: B sequences, T packed query tokens, Hq query heads, Hk KV heads (Hq % Hk == 0;
// query head h reads KV head h / (Hq / Hk)), D head dim, P cache pages of page_size slots.
//
// KV cache (shared with the KV-cache write op): k_cache and v_cache are separate
// [P, page_size, Hk, D] tensors ("NHD" pages), f16 or bf16. Sequence b owns the pages
// kv_indices[kv_indptr[b] .. kv_indptr[b+1]) in that order; its last page holds
// kv_last_page_len[b] in [1, page_size] tokens, so kv_len[b] = (num_pages - 1) * page_size
// + kv_last_page_len[b] (0 for a sequence without pages). Pages may lie anywhere in the
// cache, in any order.
//
// Queries: the qo_len[b] query tokens of sequence b are the LAST qo_len[b] tokens of its
// KV (their K/V are already in the cache), so query i sits at position
// p = kv_len[b] - qo_len[b] + i and, with causal masking, sees kv positions <= p.
// A sliding window (window_left >= 0) further restricts it to positions >= p - window_left.
// Logits: s = sm_scale * (q . k); with logits_soft_cap c > 0, s = c * tanh(s / c).
// out = softmax(s) @ v per query token and head; lse = log2(sum_j exp(s_j)) (base 2,
// FlashInfer's convention, so partial results merge with its cascade kernels).
//
// Plan / run. The CUDA implementation splits the work on the host once per batch (plan)
// and then runs any number of times with unchanged metadata (e.g. once per layer, with
// other q/out/k_cache/v_cache tensors of the same shapes). The registry calls the plan
// (OpRegistry::plan) before a series of runs; the CPU implementation has no plan.
//   plan  reads: the *_host mirrors (CPU tensors: must equal the device metadata), the
//                shapes, dtypes and attributes of every argument;
//         writes: host_int_workspace and plan_info (host), and int_workspace through an
//                asynchronous copy on the stream it is given. It never reads device data
//                and never synchronises. host_int_workspace must not be rewritten (by the
//                next plan) before that copy has executed: pageable host memory (what
//                the harness allocates) makes this automatic; with pinned memory, plan
//                twice only with a stream synchronisation in between.
//   run   reads: q, k_cache, v_cache, the device metadata, plan_info, int_workspace;
//                uses float_workspace as scratch; writes out (and lse). It needs a plan
//                of the same metadata into the same workspaces (checked against plan_info:
//                a clear error, not a crash, when plan was skipped or the shapes changed)
//                ordered before it on the stream. It launches kernels only (no allocation, copy or sync): it
//                can be captured in a CUDA graph. With cuda_graph = 1 the plan keeps the
//                launch configuration fixed for a given batch size (and, for prefill,
//                query token count), so a graph captured after one plan stays valid when a
//                later plan into the same workspaces changes only the sequence lengths
//                (FlashInfer's enable_cuda_graph); the tensors must stay at the same
//                addresses. Decode has kDecodeGraphGrids such configurations per batch
//                size (cuda_graph = k, "grid classes", below): a graph replays only plans
//                of the class it was captured with. Run does not check kv_indices: page
//                indices must be in [0, P).
// Workspaces: paged_attention_workspace_bytes() gives sizes that suffice on any Hopper
// GPU with up to kPagedAttentionMaxSms SMs; plan reports a clear error if they are short.
#pragma once
#include <algorithm>
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

inline constexpr int kAttentionPlanInfoLen = 48;   // plan_info: i64 entries
inline constexpr int64_t kPagedAttentionMaxSms = 160;

struct PagedAttentionWorkspaceBytes {
  int64_t float_bytes = 0;  // float_workspace (device)
  int64_t int_bytes = 0;    // int_workspace (device) and host_int_workspace (host), each
};

// Bytes of float_workspace that the prefill's contiguous-KV path needs for `kv_rows` page
// rows (the batch's pages times page_size): K and V of every KV head, 16-bit, plus
// alignment. The path copies the pages out of the cache into head-major buffers so that
// the kernel loads whole 128-row tiles by TMA instead of gathering 16-row pages; the plan
// takes it only where the float_workspace holds that copy (else the paged kernels run).
inline int64_t prefill_contiguous_kv_bytes(int64_t kv_rows, int64_t num_kv_heads, int64_t head_dim) {
  return 2 * kv_rows * num_kv_heads * head_dim * 2 + 512;
}

// Conservative workspace sizes for a batch of `batch` sequences with `num_q_tokens` query
// tokens in total (decode: num_q_tokens = batch). `max_kv_rows` > 0 also sizes the float
// workspace for the prefill's contiguous-KV path over up to that many page rows (a batch
// without cached prefixes has at most num_q_tokens + batch * (page_size - 1)).
inline PagedAttentionWorkspaceBytes paged_attention_workspace_bytes(int64_t batch, int64_t num_q_tokens,
                                                                   int64_t num_qo_heads, int64_t num_kv_heads,
                                                                   int64_t head_dim, int64_t max_kv_rows = 0) {
  // Decode splits long sequences into chunks so that every SM is busy: at most 16 CTAs of
  // >= 128 threads per SM, one CTA per (chunk, kv head); each chunk keeps a partial output
  // row (D floats + 1) per query head.
  const int64_t max_ctas = kPagedAttentionMaxSms * 16;
  const int64_t kv_heads = std::max<int64_t>(num_kv_heads, 1);
  const int64_t split_rows = std::max(batch, (max_ctas + kv_heads - 1) / kv_heads);
  // Hopper prefill: one work item per (query head, 128-row query tile), 8 i32 arrays.
  const int64_t works = num_qo_heads * ((num_q_tokens + 127) / 128 + batch);
  PagedAttentionWorkspaceBytes w;
  w.float_bytes = num_qo_heads * split_rows * (head_dim + 1) * 4 + 4096;
  if (max_kv_rows > 0)
    w.float_bytes = std::max(w.float_bytes, prefill_contiguous_kv_bytes(max_kv_rows, num_kv_heads, head_dim));
  w.int_bytes = std::max(8 * 4 * works + 4 * (kPagedAttentionMaxSms + 1), 16 * split_rows) + 4096;
  return w;
}

// Prefill / chunked prefill / mixed batches: ragged queries against paged KV.
struct BatchPrefillPagedAttentionArgs {
  static constexpr const char* kName = "batch_prefill_paged_attention";
  TensorView out;               // [T, Hq, D] written; dtype of q; contiguous
  TensorView lse;               // [T, Hq] f32 written (base-2 log-sum-exp); optional: data == nullptr skips it
  TensorView q;                 // [T, Hq, D] read; f16/bf16; last dim contiguous, 16-byte aligned rows
  TensorView k_cache;           // [P, page_size, Hk, D] read; dtype of q; contiguous
  TensorView v_cache;           // [P, page_size, Hk, D] read; like k_cache
  TensorView qo_indptr;         // [B+1] i32 read (device): query tokens of sequence b are [qo_indptr[b], qo_indptr[b+1])
  TensorView kv_indptr;         // [B+1] i32 read (device): pages of sequence b are kv_indices[kv_indptr[b] ..]
  TensorView kv_indices;        // [nnz_pages] i32 read (device): page numbers in [0, P)
  TensorView kv_last_page_len;  // [B] i32 read (device): tokens in the last page, in [1, page_size]
  TensorView qo_indptr_host;         // [B+1] i32 on the CPU: copy of qo_indptr (plan reads it)
  TensorView kv_indptr_host;         // [B+1] i32 on the CPU: copy of kv_indptr
  TensorView kv_last_page_len_host;  // [B] i32 on the CPU: copy of kv_last_page_len
  TensorView float_workspace;     // [bytes] u8 (device): scratch of run
  TensorView int_workspace;       // [bytes] u8 (device): schedule written by plan, read by run
  TensorView host_int_workspace;  // [bytes >= int_workspace] u8 on the CPU (pinned or pageable): plan's staging
  TensorView plan_info;           // [kAttentionPlanInfoLen] i64 on the CPU: written by plan, read by run
  float sm_scale;         // logit scale, > 0 (models: 1 / sqrt(D))
  float logits_soft_cap;  // 0 = none; > 0: s = cap * tanh(s / cap)
  int32_t window_left;    // -1 = none; >= 0: query at p sees kv positions [p - window_left, p]
  int32_t causal;         // 1: query at p sees kv positions <= p; 0: all kv positions (window still applies)
  int32_t cuda_graph;     // 1: keep the launch configuration fixed across plans (see above)
};

// Decode: one query token per sequence (the last token of its KV).
struct BatchDecodePagedAttentionArgs {
  static constexpr const char* kName = "batch_decode_paged_attention";
  TensorView out;               // [B, Hq, D] written; dtype of q; contiguous
  TensorView lse;               // [B, Hq] f32 written (base-2); optional: data == nullptr skips it
  TensorView q;                 // [B, Hq, D] read; f16/bf16; last dim contiguous, 16-byte aligned rows
  TensorView k_cache;           // [P, page_size, Hk, D] read; dtype of q; contiguous
  TensorView v_cache;           // [P, page_size, Hk, D] read; like k_cache
  TensorView kv_indptr;         // [B+1] i32 read (device)
  TensorView kv_indices;        // [nnz_pages] i32 read (device)
  TensorView kv_last_page_len;  // [B] i32 read (device); every sequence has kv_len >= 1
  TensorView kv_indptr_host;         // [B+1] i32 on the CPU: copy of kv_indptr (plan reads it)
  TensorView kv_last_page_len_host;  // [B] i32 on the CPU: copy of kv_last_page_len
  TensorView float_workspace;     // [bytes] u8 (device): split-KV partial outputs
  TensorView int_workspace;       // [bytes] u8 (device): schedule written by plan, read by run
  TensorView host_int_workspace;  // [bytes >= int_workspace] u8 on the CPU: plan's staging
  TensorView plan_info;           // [kAttentionPlanInfoLen] i64 on the CPU: written by plan, read by run
  float sm_scale;         // logit scale, > 0
  float logits_soft_cap;  // 0 = none
  int32_t window_left;    // -1 = none; >= 0: sees kv positions [kv_len - 1 - window_left, kv_len - 1]
  int32_t cuda_graph;     // 0: eager; k in [1, kDecodeGraphGrids]: launch configuration fixed per (batch size, k)
};

// Decode in a CUDA graph. Splitting long sequences into KV chunks keeps every SM busy, but
// a graph replays one grid, so a graph-mode plan pads the split grid to a size fixed per
// batch size; padding CTAs exit at once. Padding to the whole device (every CTA the kernel
// can keep resident) costs more than a short context's attention: thousands of empty CTAs
// per layer (H100, Llama-3.1-8B shapes, batch 4 x 1k context: a 6.89 ms decode step
// against 6.46 ms with the grid capped at 2 CTAs per SM). So there are grid classes:
// class k caps the grid at kDecodeGraphCtasPerSm[k] CTAs per SM (0: no cap), never below
// one CTA per sequence and KV head. A small cap makes long contexts' chunks long (and
// those need the whole device): decode_graph_grid picks the smallest grid that keeps
// chunks at most kDecodeGraphMaxChunkTokens long.
inline constexpr int32_t kDecodeGraphGrids = 3;
inline constexpr int32_t kDecodeGraphCtasPerSm[kDecodeGraphGrids + 1] = {0, 0, 4, 2};
inline constexpr int64_t kDecodeGraphMaxChunkTokens = 256;
// The split never cuts chunks shorter than this. FlashInfer's plan uses 128 tokens; its
// decode kernel walks a CTA's chunk serially, so at batch 1 with a short context (few CTAs,
// long chunks) it is latency-bound: 16-token chunks took Qwen3-30B-A3B's batch-1 decode
// attention from 11.1 to 3.1 us a layer (bench/results/h100/decode_min_chunk.json).
inline constexpr int64_t kDecodeMinChunkTokens = 16;

// The CTAs grid class k >= 2 allows a batch of `batch` sequences (its cap, or one CTA per
// sequence and KV head when that is more). Class 1 has no cap: the kernel's occupancy.
inline int64_t decode_graph_grid_ctas(int32_t k, int64_t sm_count, int64_t batch, int64_t num_kv_heads) {
  return std::max<int64_t>(kDecodeGraphCtasPerSm[k] * sm_count, batch * num_kv_heads);
}

// The grid class (1..kDecodeGraphGrids) for a decode batch whose sequence b holds
// pages[b] KV pages of page_size tokens, with num_kv_heads KV heads on sm_count SMs.
int32_t decode_graph_grid(const int32_t* pages, int64_t batch, int64_t page_size, int64_t num_kv_heads,
                          int64_t sm_count);

}  // namespace fk::ops
