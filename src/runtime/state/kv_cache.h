// The paged KV cache of a model: per layer, k and v pages [P, page_size, Hk, D] ("NHD",
// shared by reshape_and_cache and the attention ops), all in one allocation.
#pragma once
#include <cstdint>

#include "runtime/views.h"
#include "fk/tensor.h"

namespace fk::engine {

class KvCache {
 public:
  KvCache() = default;
  KvCache(int64_t layers, int64_t pages, int64_t page_size, int64_t kv_heads, int64_t head_dim, DType dtype,
          Device device, void* stream = nullptr)
      : pages_(pages), page_size_(page_size) {
    FK_CHECK(layers > 0 && pages > 0 && page_size > 0 && kv_heads > 0 && head_dim > 0,
             "KV cache: every size must be positive (layers ", layers, ", pages ", pages, ", page size ", page_size, ")");
    storage_ = Tensor::zeros({layers, 2, pages, page_size, kv_heads, head_dim}, dtype, device, stream);
  }
  TensorView k(int64_t layer) const { return index0(index0(storage_.view(), layer), 0); }
  TensorView v(int64_t layer) const { return index0(index0(storage_.view(), layer), 1); }
  int64_t num_pages() const { return pages_; }
  int64_t page_size() const { return page_size_; }
  int64_t bytes() const { return static_cast<int64_t>(storage_.nbytes()); }
  // Bytes one page takes across all layers (k and v): what sizing the pool divides by.
  static int64_t bytes_per_page(int64_t layers, int64_t page_size, int64_t kv_heads, int64_t head_dim, DType dtype) {
    return layers * 2 * page_size * kv_heads * head_dim * static_cast<int64_t>(dtype_size(dtype));
  }

 private:
  Tensor storage_;
  int64_t pages_ = 0, page_size_ = 0;
};

}  // namespace fk::engine
