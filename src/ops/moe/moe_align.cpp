#include "ops/moe/moe_align.h"

#include <algorithm>

#include "fk/status.h"

namespace fk::ops {

AlignLayout align_layout(const int32_t* ids, int64_t num_slots, int64_t num_experts, int64_t block_size) {
  AlignLayout l;
  l.block_size = block_size;
  l.count.assign(static_cast<size_t>(num_experts), 0);
  for (int64_t i = 0; i < num_slots; ++i)
    if (ids[i] >= 0 && ids[i] < num_experts) ++l.count[static_cast<size_t>(ids[i])];
  l.offset.assign(static_cast<size_t>(num_experts + 1), 0);
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t c = l.count[static_cast<size_t>(e)];
    l.offset[static_cast<size_t>(e + 1)] = l.offset[static_cast<size_t>(e)] + (c + block_size - 1) / block_size * block_size;
  }
  return l;
}

void align_reference(const TensorView& sorted_token_ids, const TensorView& expert_ids,
                     const TensorView& num_tokens_post_padded, const TensorView& topk_ids, int64_t num_experts,
                     int64_t block_size) {
  const int64_t N = topk_ids.numel();
  const auto* ids = static_cast<const int32_t*>(topk_ids.data);
  const AlignLayout l = align_layout(ids, N, num_experts, block_size);
  auto* sorted = static_cast<int32_t*>(sorted_token_ids.data);
  auto* blocks = static_cast<int32_t*>(expert_ids.data);
  const int64_t S = sorted_token_ids.shape[0], B = expert_ids.shape[0];
  std::fill(sorted, sorted + S, static_cast<int32_t>(N));
  std::vector<int64_t> next(l.offset.begin(), l.offset.end() - 1);
  for (int64_t i = 0; i < N; ++i)
    if (ids[i] >= 0 && ids[i] < num_experts) sorted[next[static_cast<size_t>(ids[i])]++] = static_cast<int32_t>(i);
  std::fill(blocks, blocks + B, -1);
  for (int64_t e = 0; e < num_experts; ++e)
    for (int64_t r = l.offset[static_cast<size_t>(e)]; r < l.offset[static_cast<size_t>(e + 1)]; r += block_size)
      blocks[r / block_size] = static_cast<int32_t>(e);
  *static_cast<int32_t*>(num_tokens_post_padded.data) = static_cast<int32_t>(l.total());
}

std::string check_align(const TensorView& topk_ids, int64_t num_experts, int64_t block_size,
                        const TensorView& sorted_token_ids, const TensorView& expert_ids,
                        const TensorView& num_tokens_post_padded) {
  const int64_t N = topk_ids.numel();
  const auto* ids = static_cast<const int32_t*>(topk_ids.data);
  const AlignLayout l = align_layout(ids, N, num_experts, block_size);
  const auto* sorted = static_cast<const int32_t*>(sorted_token_ids.data);
  const auto* blocks = static_cast<const int32_t*>(expert_ids.data);
  const int64_t S = sorted_token_ids.shape[0], B = expert_ids.shape[0];
  const int32_t got_total = *static_cast<const int32_t*>(num_tokens_post_padded.data);
  if (got_total != l.total())
    return concat("num_tokens_post_padded is ", got_total, ", expected ", l.total());
  for (int64_t b = 0; b < B; ++b) {
    int64_t want = -1;
    if (b * block_size < l.total()) {
      // The expert whose range holds row b * block_size.
      want = std::upper_bound(l.offset.begin(), l.offset.end(), b * block_size) - l.offset.begin() - 1;
    }
    if (blocks[b] != want) return concat("expert_ids[", b, "] is ", blocks[b], ", expected ", want);
  }
  // Each expert's range: exactly its slots (any order) and sentinels.
  std::vector<std::vector<int32_t>> want(static_cast<size_t>(num_experts));
  for (int64_t i = 0; i < N; ++i)
    if (ids[i] >= 0 && ids[i] < num_experts) want[static_cast<size_t>(ids[i])].push_back(static_cast<int32_t>(i));
  for (int64_t e = 0; e < num_experts; ++e) {
    const int64_t begin = l.offset[static_cast<size_t>(e)], end = l.offset[static_cast<size_t>(e + 1)];
    std::vector<int32_t>& w = want[static_cast<size_t>(e)];
    w.resize(static_cast<size_t>(end - begin), static_cast<int32_t>(N));
    std::vector<int32_t> got(sorted + begin, sorted + end);
    std::sort(got.begin(), got.end());
    std::sort(w.begin(), w.end());
    if (got != w) {
      for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != w[i])
          return concat("sorted_token_ids[", begin, ", ", end, ") of expert ", e, " does not hold exactly its ",
                        l.count[static_cast<size_t>(e)], " slots and ", end - begin - l.count[static_cast<size_t>(e)],
                        " sentinels (", N, "): sorted, entry ", i, " is ", got[i], ", expected ", w[i]);
    }
  }
  for (int64_t i = l.total(); i < S; ++i)
    if (sorted[i] != N) return concat("sorted_token_ids[", i, "] is ", sorted[i], ", expected the sentinel ", N);
  return "";
}

}  // namespace fk::ops
