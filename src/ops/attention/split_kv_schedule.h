// The schedule of fk's own split-KV decode kernel (cuda/split_kv_decode.cuh): which CTA
// attends to which slice of which sequence's KV. Host arithmetic only, so the CPU tests
// check it; the CUDA plan copies the image it builds into int_workspace.
//
// Each sequence's KV range (the whole sequence, or the sliding window's part) is cut into
// chunks of chunk_tokens tokens (the last one shorter). A work item is one chunk; the grid
// is (items, KV heads), one CTA per (item, KV head). The chunk is the shortest multiple
// of kSplitKvChunkQuantum, at least min_chunk_tokens, for which the items fit
// item_budget: short contexts get many short chunks (every SM streams a little, which is
// what a latency-bound batch-1 step needs), long ones the fewest chunks the budget allows.
// A CTA whose sequence has more than one chunk writes a partial result; a merge kernel
// combines them, in chunk order.
//
// Image layout (int32, what the kernel reads):
//   [0]                   number of items
//   [1..3]                unused (keeps the items 16-byte aligned)
//   [4 .. 4 + 4 * slots)  items: {sequence, kv_begin, kv_end, first page entry}: the chunk's
//                         token positions, and kv_indptr[sequence] (saves the kernel a load)
//   then 2 * batch        per sequence: {first item, number of chunks}
#pragma once
#include <cstdint>
#include <vector>

namespace fk::ops::attn {

inline constexpr int64_t kSplitKvChunkQuantum = 16;

struct SplitKvSchedule {
  int64_t chunk_tokens = 0;
  int64_t num_items = 0;
  int64_t grid_items = 0;      // the launch's item slots: num_items, or item_budget when padded
  std::vector<int32_t> image;  // the layout above, with grid_items item slots

  static constexpr int kItemsOffset = 4;
  int64_t seqs_offset() const { return kItemsOffset + 4 * grid_items; }
};

// kv_len[b] >= 1 tokens per sequence, whose pages start at kv_indptr[b] (batch + 1
// entries); window_left < 0: none, else a query at position p
// sees [p - window_left, p]. pad: size the grid to item_budget (a CUDA graph replays one
// grid while the lengths change), else to the items. item_budget >= batch.
SplitKvSchedule plan_split_kv(const std::vector<int32_t>& kv_len, const std::vector<int32_t>& kv_indptr,
                              int32_t window_left, int64_t kv_heads,
                              int64_t item_budget, int64_t min_chunk_tokens, bool pad);

// Bytes of int_workspace and float_workspace the kernel needs for a schedule of grid_items
// item slots (partial outputs: one row of head_dim floats and one lse per item and query head).
int64_t split_kv_int_bytes(int64_t grid_items, int64_t batch);
int64_t split_kv_float_bytes(int64_t grid_items, int64_t num_qo_heads, int64_t head_dim);

}  // namespace fk::ops::attn
