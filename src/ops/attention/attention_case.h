// Building cases of the paged attention ops from workloads: the batch layout (per
// sequence query and KV lengths), a KV cache whose pages are handed out in a random
// order (plus pages nobody owns), Philox inputs, the metadata with its host mirrors, and
// workspaces sized by paged_attention_workspace_bytes (with room for the prefill's
// contiguous-KV copy of the case's pages).
//
// Workload fields (defaults in brackets):
//   qo_lens   [prefill only] query tokens per sequence
//   kv_lens   KV tokens per sequence (>= its qo_len; decode: >= 1)
//   num_qo_heads [32], num_kv_heads [8], head_dim [128], page_size [16], dtype [bf16]
//   causal [true, prefill only], window_left [-1], logits_soft_cap [0],
//   sm_scale [1/sqrt(head_dim)], extra_pages [2],
//   cuda_graph [false]: true or 1 for graph mode, decode also a grid class 2..kDecodeGraphGrids
#pragma once
#include <cstdint>
#include <vector>

#include "fk/op_registry.h"

namespace fk::ops::attn {

struct PagedWorkload {
  bool decode = false;
  std::vector<int64_t> qo_lens;  // decode: all 1
  std::vector<int64_t> kv_lens;
  int64_t num_qo_heads = 32, num_kv_heads = 8, head_dim = 128, page_size = 16, extra_pages = 2;
  DType dtype = DType::bf16;
  double sm_scale = 0, soft_cap = 0;
  int64_t window_left = -1;
  bool causal = true;
  int32_t cuda_graph = 0;  // the op's cuda_graph argument
  // Cache slots no query may read (past a sequence's last token, pages nobody owns) hold
  // NaN instead of random data: a kernel that lets them reach the output (0 * NaN in the
  // probability-weighted sum of V) fails.
  bool nan_past_end = false;

  int64_t batch() const { return static_cast<int64_t>(kv_lens.size()); }
  int64_t num_q_tokens() const;
  // KV positions query i of sequence b sees (window and causal masking applied).
  int64_t visible(int64_t b, int64_t i) const;
  // KV tokens of sequence b that any of its queries sees.
  int64_t kv_tokens_read(int64_t b) const;
};

PagedWorkload parse_paged_workload(const Json& w, bool decode);

// The case's tensors, in the order of the argument struct of either op (decode has no
// qo_indptr / qo_indptr_host: they stay undefined here).
struct PagedCaseTensors {
  Tensor out, lse, q, k_cache, v_cache;
  Tensor qo_indptr, kv_indptr, kv_indices, kv_last_page_len;
  Tensor qo_indptr_host, kv_indptr_host, kv_last_page_len_host;
  Tensor float_workspace, int_workspace, host_int_workspace, plan_info;
};

PagedCaseTensors make_paged_tensors(const PagedWorkload& pw, uint64_t seed);

// Minimal traffic (the visible KV once, q, out, lse) and the useful flops
// (2 * 2 * sum of visible KV positions over query tokens * Hq * D).
OpCost paged_attention_cost(const PagedWorkload& pw);

// Output tolerances: out by its dtype; lse (f32) loosely, since the kernels use the
// hardware's approximate exp2/log2/tanh.
Tolerance paged_attention_tolerance(const TensorArg& arg, DType dtype);

}  // namespace fk::ops::attn
