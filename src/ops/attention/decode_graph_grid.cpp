// The choice of a decode graph's grid class (fk/ops/attention.h): host arithmetic only, the
// split being FlashInfer's (the shortest chunk, in pages, that fits the grid cap).
#include <algorithm>

#include "fk/ops/attention.h"
#include "fk/status.h"

namespace fk::ops {
namespace {

// Pages per chunk when the batch's KV is split into at most `ctas` / `kv_heads` chunks of
// equal length, no chunk shorter than `min_pages` (binary search, as FlashInfer's plan).
int64_t chunk_pages(const int32_t* pages, int64_t batch, int64_t kv_heads, int64_t ctas, int64_t min_pages) {
  int64_t low = min_pages, high = min_pages;
  for (int64_t b = 0; b < batch; ++b) high = std::max<int64_t>(high, pages[b]);
  while (low < high) {
    const int64_t mid = (low + high) / 2;
    int64_t chunks = 0;
    for (int64_t b = 0; b < batch; ++b) chunks += (std::max<int64_t>(pages[b], 1) + mid - 1) / mid;
    if (chunks * kv_heads > ctas)
      low = mid + 1;
    else
      high = mid;
  }
  return low;
}

}  // namespace

int32_t decode_graph_grid(const int32_t* pages, int64_t batch, int64_t page_size, int64_t num_kv_heads,
                          int64_t sm_count) {
  FK_CHECK(batch >= 1 && page_size >= 1 && num_kv_heads >= 1 && sm_count >= 1,
           "decode_graph_grid: batch, page_size, num_kv_heads and sm_count must be positive, got ", batch, ", ",
           page_size, ", ", num_kv_heads, ", ", sm_count);
  const int64_t min_pages = std::max<int64_t>(kDecodeMinChunkTokens / page_size, 1);
  const int64_t max_pages = std::max(min_pages, kDecodeGraphMaxChunkTokens / page_size);
  for (int32_t k = kDecodeGraphGrids; k >= 2; --k) {  // the smallest grid first
    const int64_t ctas = decode_graph_grid_ctas(k, sm_count, batch, num_kv_heads);
    if (chunk_pages(pages, batch, num_kv_heads, ctas, min_pages) <= max_pages) return k;
  }
  return 1;
}

}  // namespace fk::ops
