// plan_split_kv: the chunk length by binary search over multiples of the quantum, then the
// items in sequence order (so a sequence's chunks are consecutive items).
#include "ops/attention/split_kv_schedule.h"

#include <algorithm>

#include "fk/status.h"

namespace fk::ops::attn {
namespace {

struct KvRange {
  int32_t begin, end;
};

KvRange range_of(int32_t kv_len, int32_t window_left) {
  const int32_t begin = window_left >= 0 ? std::max(0, kv_len - 1 - window_left) : 0;
  return {begin, kv_len};
}

int64_t count_items(const std::vector<KvRange>& ranges, int64_t chunk) {
  int64_t n = 0;
  for (const KvRange& r : ranges) n += (r.end - r.begin + chunk - 1) / chunk;
  return n;
}

}  // namespace

SplitKvSchedule plan_split_kv(const std::vector<int32_t>& kv_len, const std::vector<int32_t>& kv_indptr,
                              int32_t window_left, int64_t kv_heads,
                              int64_t item_budget, int64_t min_chunk_tokens, bool pad) {
  const auto batch = static_cast<int64_t>(kv_len.size());
  FK_CHECK(batch >= 1 && kv_heads >= 1 && item_budget >= batch && min_chunk_tokens >= 1,
           "split-KV decode plan: needs batch >= 1, kv_heads >= 1, item_budget >= batch and a positive minimum "
           "chunk, got batch ", batch, ", kv_heads ", kv_heads, ", item_budget ", item_budget, ", minimum chunk ",
           min_chunk_tokens);
  FK_CHECK(kv_indptr.size() == kv_len.size() + 1, "split-KV decode plan: kv_indptr needs batch + 1 = ",
           kv_len.size() + 1, " entries, got ", kv_indptr.size());
  std::vector<KvRange> ranges;
  ranges.reserve(kv_len.size());
  int64_t longest = 1;
  for (const int32_t len : kv_len) {
    FK_CHECK(len >= 1, "split-KV decode plan: every sequence needs at least one KV token, got ", len);
    ranges.push_back(range_of(len, window_left));
    longest = std::max<int64_t>(longest, ranges.back().end - ranges.back().begin);
  }
  // Chunk lengths are multiples of the quantum: find the smallest that fits the budget.
  const int64_t q = kSplitKvChunkQuantum;
  int64_t low = (std::max(min_chunk_tokens, q) + q - 1) / q, high = std::max(low, (longest + q - 1) / q);
  while (low < high) {
    const int64_t mid = (low + high) / 2;
    if (count_items(ranges, mid * q) > item_budget)
      low = mid + 1;
    else
      high = mid;
  }
  SplitKvSchedule s;
  s.chunk_tokens = low * q;
  s.num_items = count_items(ranges, s.chunk_tokens);
  s.grid_items = pad ? item_budget : s.num_items;
  s.image.assign(static_cast<size_t>(s.seqs_offset() + 2 * batch), 0);
  s.image[0] = static_cast<int32_t>(s.num_items);
  int32_t item = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const KvRange r = ranges[b];
    const int32_t first = item;
    int32_t chunk = 0;
    for (int64_t begin = r.begin; begin < r.end; begin += s.chunk_tokens, ++chunk, ++item) {
      int32_t* it = s.image.data() + SplitKvSchedule::kItemsOffset + 4 * item;
      it[0] = static_cast<int32_t>(b);
      it[1] = static_cast<int32_t>(begin);
      it[2] = static_cast<int32_t>(std::min<int64_t>(r.end, begin + s.chunk_tokens));
      it[3] = kv_indptr[b];
    }
    s.image[s.seqs_offset() + 2 * b] = first;
    s.image[s.seqs_offset() + 2 * b + 1] = chunk;
  }
  return s;
}

int64_t split_kv_int_bytes(int64_t grid_items, int64_t batch) {
  return 4 * (SplitKvSchedule::kItemsOffset + 4 * grid_items + 2 * batch);
}

int64_t split_kv_float_bytes(int64_t grid_items, int64_t num_qo_heads, int64_t head_dim) {
  return 4 * grid_items * num_qo_heads * (head_dim + 1);
}

}  // namespace fk::ops::attn
