// choose_contiguous_kv (src/ops/attention/contiguous_kv_policy.h): which prefill batches
// the plan sends through the copy of their pages, from pairs per copied row, the kernel's
// support, the workspace and the mode (the prefill op's variants); and the counts it uses.
#include "ops/attention/contiguous_kv_policy.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "fk/op_registry.h"
#include "fk/ops/attention.h"

namespace fk::ops::attn {
namespace {

// A batch of sequences with these query and KV lengths in pages of `page_size`.
PagedBatch batch_of(const std::vector<int32_t>& qo, const std::vector<int32_t>& kv, int64_t page_size = 16) {
  PagedBatch pb;
  pb.page_size = page_size;
  pb.qo_indptr = {0};
  pb.kv_indptr = {0};
  for (size_t b = 0; b < kv.size(); ++b) {
    const int32_t pages = static_cast<int32_t>((kv[b] + page_size - 1) / page_size);
    pb.qo_indptr.push_back(pb.qo_indptr.back() + qo[b]);
    pb.kv_indptr.push_back(pb.kv_indptr.back() + pages);
    pb.kv_last_page_len.push_back(pages == 0 ? 0 : static_cast<int32_t>(kv[b] - (pages - 1) * page_size));
    pb.kv_len.push_back(kv[b]);
  }
  return pb;
}

ContiguousKvRequest request(int64_t float_bytes = int64_t{1} << 40) {
  ContiguousKvRequest r;
  r.head_dim = 128;
  r.page_size = 16;
  r.num_qo_heads = 32;
  r.num_kv_heads = 8;
  r.sm_count = 132;
  r.dtype_bytes = 2;
  r.float_workspace_bytes = float_bytes;
  return r;
}

TEST(ContiguousKvPolicy, CountsRowsAndPairs) {
  const PagedBatch pb = batch_of({3, 0, 5}, {10, 17, 5});
  EXPECT_EQ(contiguous_kv_rows(pb), (1 + 2 + 1) * 16);  // whole pages
  // Causal: the 3 queries of the first sequence sit at positions 7, 8, 9 (8 + 9 + 10 keys);
  // the last sequence's 5 queries see 1 .. 5 keys.
  EXPECT_EQ(visible_pairs(pb, /*causal=*/true, -1), 8 + 9 + 10 + (1 + 2 + 3 + 4 + 5));
  EXPECT_EQ(visible_pairs(pb, /*causal=*/false, -1), 3 * 10 + 5 * 5);
  // A left window of 2: at most 3 keys each.
  EXPECT_EQ(visible_pairs(pb, /*causal=*/true, 2), 3 * 3 + (1 + 2 + 3 + 3 + 3));
}

TEST(ContiguousKvPolicy, AutomaticTakesWhatTheCopyPaysFor) {
  const ContiguousKvMode a = ContiguousKvMode::automatic;
  const auto same = [](int n, int32_t len) { return std::vector<int32_t>(static_cast<size_t>(n), len); };
  // Measured wins (results file in the header): long prompts, chunks over a prefix,
  // batches of 512-token prompts.
  EXPECT_TRUE(choose_contiguous_kv(batch_of({16384}, {16384}), request(), a));
  EXPECT_TRUE(choose_contiguous_kv(batch_of(same(4, 2048), same(4, 8192)), request(), a));
  EXPECT_TRUE(choose_contiguous_kv(batch_of(same(16, 512), same(16, 512)), request(), a));
  EXPECT_TRUE(choose_contiguous_kv(batch_of(same(4, 1024), same(4, 1024)), request(), a));
  // Ties and losses: few pairs per row (short prompts, short chunks over long contexts,
  // decode-like rows), or too little work to fill the device twice.
  EXPECT_FALSE(choose_contiguous_kv(batch_of(same(32, 256), same(32, 256)), request(), a));
  EXPECT_FALSE(choose_contiguous_kv(batch_of(same(16, 64), same(16, 2048)), request(), a));
  EXPECT_FALSE(choose_contiguous_kv(batch_of({1, 1}, {9000, 9000}), request(), a));
  EXPECT_FALSE(choose_contiguous_kv(batch_of({1024}, {1024}), request(), a));
  EXPECT_FALSE(choose_contiguous_kv(batch_of({256}, {8192}), request(), a));
  // The work threshold counts SMs: a smaller device fills sooner.
  ContiguousKvRequest small_device = request();
  small_device.sm_count = 64;
  EXPECT_TRUE(choose_contiguous_kv(batch_of({1024}, {1024}), small_device, a));
  // A narrow window leaves few pairs per row.
  ContiguousKvRequest windowed = request();
  windowed.window_left = 127;
  EXPECT_FALSE(choose_contiguous_kv(batch_of({16384}, {16384}), windowed, a));
}

TEST(ContiguousKvPolicy, OnlyWhereTheKernelAndTheWorkspaceAllow) {
  const PagedBatch pb = batch_of({16384}, {16384});
  for (const ContiguousKvMode m : {ContiguousKvMode::automatic, ContiguousKvMode::always}) {
    EXPECT_TRUE(choose_contiguous_kv(pb, request(), m));
    ContiguousKvRequest r = request();
    r.head_dim = 64;
    EXPECT_FALSE(choose_contiguous_kv(pb, r, m)) << "head dim 64";
    r = request();
    r.page_size = kPagedTmaMinPageSize;  // the paged TMA mainloop loads these pages itself
    EXPECT_FALSE(choose_contiguous_kv(batch_of({16384}, {16384}, r.page_size), r, m));
    r = request();
    r.cuda_graph = true;
    EXPECT_FALSE(choose_contiguous_kv(pb, r, m)) << "graph mode";
    r = request();
    r.dtype_bytes = 1;
    EXPECT_FALSE(choose_contiguous_kv(pb, r, m)) << "8-bit KV";
    const int64_t need = prefill_contiguous_kv_bytes(16384, 8, 128);
    EXPECT_FALSE(choose_contiguous_kv(pb, request(need - 1), m)) << "workspace one byte short";
    EXPECT_TRUE(choose_contiguous_kv(pb, request(need), m));
  }
  EXPECT_FALSE(choose_contiguous_kv(pb, request(), ContiguousKvMode::never));
  // Always: also where automatic would not, but never without pages.
  EXPECT_TRUE(choose_contiguous_kv(batch_of({1}, {3}), request(), ContiguousKvMode::always));
  EXPECT_FALSE(choose_contiguous_kv(batch_of({0}, {0}), request(), ContiguousKvMode::always));
}

TEST(ContiguousKvPolicy, WorkspaceSizingCoversTheCopy) {
  const auto without = paged_attention_workspace_bytes(1, 16384, 32, 8, 128);
  const auto with = paged_attention_workspace_bytes(1, 16384, 32, 8, 128, 16384);
  EXPECT_LT(without.float_bytes, prefill_contiguous_kv_bytes(16384, 8, 128));
  EXPECT_GE(with.float_bytes, prefill_contiguous_kv_bytes(16384, 8, 128));
  EXPECT_EQ(with.int_bytes, without.int_bytes);
}

TEST(ContiguousKvPolicy, ModeFromThePrefillOpsVariants) {
  OpRegistry& r = OpRegistry::global();
  const char* op = BatchPrefillPagedAttentionArgs::kName;
  r.select_variants(op, {});
  EXPECT_EQ(contiguous_kv_mode(), ContiguousKvMode::automatic);
  r.select_variants(op, {"contiguous_kv"});
  EXPECT_EQ(contiguous_kv_mode(), ContiguousKvMode::always);
  r.select_variants(op, {"no_contiguous_kv"});
  EXPECT_EQ(contiguous_kv_mode(), ContiguousKvMode::never);
  r.select_variants(op, {"contiguous_kv", "no_contiguous_kv"});
  EXPECT_THROW(contiguous_kv_mode(), Error);
  r.select_variants(op, {});
  EXPECT_EQ(contiguous_kv_mode(), ContiguousKvMode::automatic);
}

}  // namespace
}  // namespace fk::ops::attn
