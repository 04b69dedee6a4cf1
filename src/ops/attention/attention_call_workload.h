// The paged attention workload fields (attention_case.h) of a captured call: the batch
// layout is read back from the host mirrors of the metadata.
#pragma once
#include <string>
#include <vector>

#include "fk/op_registry.h"

namespace fk::ops::attn {

// Per-sequence lengths from an indptr's host mirror.
inline std::vector<int64_t> lengths_of_indptr(const TensorView& indptr) {
  std::vector<int64_t> out;
  const auto* p = static_cast<const int32_t*>(indptr.data);
  for (int64_t b = 0; b + 1 < indptr.shape[0]; ++b) out.push_back(p[b + 1] - p[b]);
  return out;
}

// Per-sequence KV tokens from the page indptr and the last pages' fill.
inline std::vector<int64_t> kv_lengths(const TensorView& kv_indptr, const TensorView& last, int64_t page_size) {
  std::vector<int64_t> pages = lengths_of_indptr(kv_indptr), out;
  const auto* l = static_cast<const int32_t*>(last.data);
  for (size_t b = 0; b < pages.size(); ++b)
    out.push_back(pages[b] == 0 ? 0 : (pages[b] - 1) * page_size + l[b]);
  return out;
}

// The fields both attention ops share (heads, head_dim, pages, dtype, soft-cap, window, kv_lens).
template <class Args>
Json attention_call_workload(const Args& a) {
  Json w = {{"num_qo_heads", a.q.shape[1]}, {"num_kv_heads", a.k_cache.shape[2]}, {"head_dim", a.q.shape[2]},
            {"page_size", a.k_cache.shape[1]}, {"dtype", std::string(dtype_name(a.q.dtype))}};
  if (a.logits_soft_cap > 0) w["logits_soft_cap"] = a.logits_soft_cap;
  if (a.window_left >= 0) w["window_left"] = a.window_left;
  w["kv_lens"] = kv_lengths(a.kv_indptr_host, a.kv_last_page_len_host, a.k_cache.shape[1]);
  return w;
}

}  // namespace fk::ops::attn
