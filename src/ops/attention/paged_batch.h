// The host-side picture of a paged batch: per-sequence query and KV lengths read from the
// (CPU) index tensors, with every rule of the layout checked. The CPU reference reads it
// from the metadata, the CUDA plan from the host mirrors.
#pragma once
#include <cstdint>
#include <vector>

#include "fk/tensor_view.h"

namespace fk::ops::attn {

struct PagedBatch {
  int64_t page_size = 0;
  std::vector<int32_t> qo_indptr;         // [B+1]; decode: 0, 1, ..., B
  std::vector<int32_t> kv_indptr;         // [B+1] in pages
  std::vector<int32_t> kv_last_page_len;  // [B]
  std::vector<int32_t> kv_len;            // [B] in tokens

  int64_t size() const { return static_cast<int64_t>(kv_len.size()); }
  int64_t qo_len(int64_t b) const { return qo_indptr[b + 1] - qo_indptr[b]; }
  int64_t num_pages(int64_t b) const { return kv_indptr[b + 1] - kv_indptr[b]; }
  int64_t num_q_tokens() const { return qo_indptr.back(); }
};

// Reads the layout from CPU i32 vectors and checks it, naming the first violation:
//   qo_indptr (nullptr for decode: one query token per sequence) starts at 0, never
//   decreases and ends at num_q_tokens; kv_indptr starts at 0, never decreases and ends
//   at most at num_page_entries (the length of kv_indices); a sequence with pages has
//   kv_last_page_len in [1, page_size]; qo_len <= kv_len; decode needs kv_len >= 1.
PagedBatch read_paged_batch(const char* op, const TensorView* qo_indptr, const TensorView& kv_indptr,
                            const TensorView& kv_last_page_len, int64_t num_q_tokens, int64_t num_page_entries,
                            int64_t page_size);

// Checks that a host mirror holds the values of the metadata it mirrors (both on the CPU).
void expect_same_values(const char* op, const char* mirror, const TensorView& host, const char* of,
                        const TensorView& metadata);

}  // namespace fk::ops::attn
