// plan_split_kv (src/ops/attention/split_kv_schedule.h): the chunk length, the items and
// their order, the per-sequence records, padding, windows and bad input.
#include "ops/attention/split_kv_schedule.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "fk/status.h"
#include "support/test_seed.h"

namespace fk::ops::attn {
namespace {

struct Item {
  int32_t seq, begin, end, page_base;
};

// kv_indptr of sequences of these lengths in 16-token pages (their page lists back to back).
std::vector<int32_t> indptr_of(const std::vector<int32_t>& kv_len) {
  std::vector<int32_t> indptr = {0};
  for (const int32_t len : kv_len) indptr.push_back(indptr.back() + (len + 15) / 16);
  return indptr;
}

SplitKvSchedule plan(const std::vector<int32_t>& kv_len, int32_t window_left, int64_t kv_heads, int64_t budget,
                     int64_t min_chunk, bool pad) {
  return plan_split_kv(kv_len, indptr_of(kv_len), window_left, kv_heads, budget, min_chunk, pad);
}

Item item_at(const SplitKvSchedule& s, int64_t i) {
  const int32_t* p = s.image.data() + SplitKvSchedule::kItemsOffset + 4 * i;
  return {p[0], p[1], p[2], p[3]};
}

// Every token of every sequence's range in exactly one item, in order, each sequence's
// chunks consecutive, at most chunk_tokens long, with the sequence's first page entry.
void expect_covers(const SplitKvSchedule& s, const std::vector<int32_t>& kv_len, int32_t window_left) {
  const auto batch = static_cast<int64_t>(kv_len.size());
  ASSERT_EQ(s.image[0], s.num_items);
  ASSERT_EQ(static_cast<int64_t>(s.image.size()), s.seqs_offset() + 2 * batch);
  int64_t next = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int32_t first = s.image[s.seqs_offset() + 2 * b], chunks = s.image[s.seqs_offset() + 2 * b + 1];
    EXPECT_EQ(first, next) << "sequence " << b;
    const int32_t begin = window_left >= 0 ? std::max(0, kv_len[b] - 1 - window_left) : 0;
    int32_t pos = begin;
    for (int32_t c = 0; c < chunks; ++c) {
      const Item it = item_at(s, first + c);
      EXPECT_EQ(it.seq, b);
      EXPECT_EQ(it.page_base, indptr_of(kv_len)[b]);
      EXPECT_EQ(it.begin, pos);
      EXPECT_GT(it.end, it.begin);
      EXPECT_LE(it.end - it.begin, s.chunk_tokens);
      pos = it.end;
    }
    EXPECT_EQ(pos, kv_len[b]) << "sequence " << b;
    next += chunks;
  }
  EXPECT_EQ(next, s.num_items);
}

TEST(SplitKvSchedule, ShortContextGetsMinimumChunks) {
  // Batch 1, 200 tokens, a budget of 66 items: 16-token chunks (13 of them).
  const SplitKvSchedule s = plan({200}, -1, 4, 66, 16, false);
  EXPECT_EQ(s.chunk_tokens, 16);
  EXPECT_EQ(s.num_items, 13);
  EXPECT_EQ(s.grid_items, 13);
  expect_covers(s, {200}, -1);
}

TEST(SplitKvSchedule, ChunksGrowUntilTheItemsFitTheBudget) {
  // 4 x 1000 tokens in 33 items: 128-token chunks (8 a sequence, 32 items); 112 would need 36.
  const std::vector<int32_t> lens = {1000, 1000, 1000, 1000};
  const SplitKvSchedule s = plan(lens, -1, 8, 33, 16, true);
  EXPECT_EQ(s.chunk_tokens, 128);
  EXPECT_EQ(s.num_items, 32);
  EXPECT_EQ(s.grid_items, 33);  // padded: a graph's grid
  expect_covers(s, lens, -1);
}

TEST(SplitKvSchedule, BudgetOfOneItemPerSequenceKeepsSequencesWhole) {
  const std::vector<int32_t> lens = {4096, 1, 77, 4000};
  const SplitKvSchedule s = plan(lens, -1, 8, 4, 16, false);
  EXPECT_EQ(s.num_items, 4);
  EXPECT_GE(s.chunk_tokens, 4096);
  expect_covers(s, lens, -1);
}

TEST(SplitKvSchedule, WindowLimitsTheRange) {
  const std::vector<int32_t> lens = {3000, 5, 501, 502};
  const SplitKvSchedule s = plan(lens, 500, 2, 40, 16, false);
  expect_covers(s, lens, 500);
  EXPECT_EQ(item_at(s, 0).begin, 3000 - 1 - 500);
}

TEST(SplitKvSchedule, RandomBatchesAreCoveredWithinBudget) {
  std::mt19937 rng(static_cast<uint32_t>(test::seed_for("split_kv_schedule")));
  for (int trial = 0; trial < 200; ++trial) {
    const int batch = 1 + static_cast<int>(rng() % 64);
    std::vector<int32_t> lens(batch);
    for (int32_t& l : lens) l = 1 + static_cast<int32_t>(rng() % (rng() % 2 ? 100 : 20000));
    const int64_t kv_heads = 1 + rng() % 8;
    const int64_t budget = batch + static_cast<int64_t>(rng() % 600);
    const int32_t window = rng() % 3 == 0 ? static_cast<int32_t>(rng() % 3000) : -1;
    const bool pad = rng() % 2;
    const SplitKvSchedule s = plan(lens, window, kv_heads, budget, 16, pad);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " batch " << batch << " budget " << budget);
    EXPECT_LE(s.num_items, budget);
    EXPECT_EQ(s.grid_items, pad ? budget : s.num_items);
    EXPECT_EQ(s.chunk_tokens % kSplitKvChunkQuantum, 0);
    expect_covers(s, lens, window);
    if (s.chunk_tokens > 16) {  // the chunk is the shortest that fits: one quantum less does not
      int64_t n = 0;
      for (int32_t l : lens) {
        const int32_t begin = window >= 0 ? std::max(0, l - 1 - window) : 0;
        n += (l - begin + s.chunk_tokens - 16 - 1) / (s.chunk_tokens - 16);
      }
      EXPECT_GT(n, budget);
    }
  }
}

TEST(SplitKvSchedule, WorkspaceBytesCoverTheImage) {
  const SplitKvSchedule s = plan({100, 2000, 7}, -1, 8, 50, 16, true);
  EXPECT_EQ(split_kv_int_bytes(s.grid_items, 3), static_cast<int64_t>(s.image.size() * 4));
  EXPECT_EQ(split_kv_float_bytes(50, 32, 128), 4 * 50 * 32 * 129);
}

TEST(SplitKvSchedule, BadInputIsRefused) {
  EXPECT_THROW(plan({}, -1, 8, 10, 16, false), Error);
  EXPECT_THROW(plan({10, 0}, -1, 8, 10, 16, false), Error);
  EXPECT_THROW(plan({10, 10}, -1, 8, 1, 16, false), Error);
  EXPECT_THROW(plan({10}, -1, 0, 10, 16, false), Error);
  EXPECT_THROW(plan_split_kv({10, 10}, {0, 1}, -1, 8, 10, 16, false), Error);  // kv_indptr too short
}

}  // namespace
}  // namespace fk::ops::attn
