// The KV block pool (src/runtime/state/kv_cache_manager.h): allocation and reference counts, prefix
// hits of 0, partial and full blocks, hash-collision safety, eviction order, the errors, and
// a randomised stress test against a model of the pool that also tracks what every block's
// slots hold, so that a block given to two sequences or a wrong cache hit shows up as wrong
// K/V.
#include "runtime/state/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fk/status.h"
#include "support/test_seed.h"

namespace fk::engine {
namespace {

// A sequence as its owner keeps it (the engine's Request holds the same fields): the
// manager sees it through kv() and tokens() only.
struct Sequence {
  std::string id;
  std::vector<int64_t> prompt_tokens;
  std::vector<int64_t> output_tokens;
  int64_t num_computed_tokens = 0;
  int64_t num_cached_tokens = 0;
  KvBlockTable block_ids;

  SequenceTokens tokens() const { return {prompt_tokens, output_tokens, 0}; }
  KvSequence kv() { return {id, tokens(), num_computed_tokens, num_cached_tokens, block_ids}; }
  int64_t total_tokens() const { return tokens().total(); }
  int64_t token_at(int64_t i) const { return tokens().at(i); }
};

Sequence make_request(std::string id, std::vector<int64_t> prompt) {
  Sequence r;
  r.id = std::move(id);
  r.prompt_tokens = std::move(prompt);
  return r;
}

std::vector<int64_t> iota_tokens(int64_t n, int64_t first = 100) {
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[static_cast<size_t>(i)] = first + i;
  return t;
}

// Admits r the way the scheduler does (cached prefix first), computes all its tokens but
// the last and caches the full blocks.
void admit_and_compute(KvCacheManager& kv, Sequence& r) {
  const CachedPrefix prefix = kv.find_cached_prefix(r.tokens());
  ASSERT_TRUE(kv.allocate(r.kv(), r.total_tokens() - prefix.num_tokens, &prefix));
  r.num_computed_tokens = r.total_tokens();
  kv.cache_full_blocks(r.kv());
  kv.check_invariants();
}

template <class F>
void expect_error(F&& f, const std::string& fragment) {
  try {
    f();
    ADD_FAILURE() << "no fk::Error; expected one mentioning '" << fragment << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(KvCacheManager, AllocatesCeilOfTokensOverBlockSize) {
  KvCacheManager kv(10, 4, false);
  Sequence r = make_request("a", iota_tokens(9));
  ASSERT_TRUE(kv.allocate(r.kv(), 5));
  EXPECT_EQ(r.block_ids.size(), 2u);
  EXPECT_EQ(kv.num_free_blocks(), 8);
  r.num_computed_tokens = 5;
  ASSERT_TRUE(kv.allocate(r.kv(), 3));  // 8 tokens: still 2 blocks
  EXPECT_EQ(r.block_ids.size(), 2u);
  r.num_computed_tokens = 8;
  ASSERT_TRUE(kv.allocate(r.kv(), 1));
  EXPECT_EQ(r.block_ids.size(), 3u);
  ASSERT_TRUE(kv.allocate(r.kv(), 0));
  EXPECT_EQ(r.block_ids.size(), 3u);
  for (int32_t b : r.block_ids) EXPECT_EQ(kv.ref_count(b), 1);
  kv.check_invariants();
  kv.free(r.kv());
  EXPECT_TRUE(r.block_ids.empty());
  EXPECT_EQ(kv.num_free_blocks(), 10);
  kv.free(r.kv());  // a second free does nothing
  EXPECT_EQ(kv.num_free_blocks(), 10);
  kv.check_invariants();
}

TEST(KvCacheManager, FailedAllocationChangesNothing) {
  KvCacheManager kv(3, 4, true);
  Sequence a = make_request("a", iota_tokens(20));
  ASSERT_TRUE(kv.allocate(a.kv(), 8));
  Sequence b = make_request("b", iota_tokens(20));
  EXPECT_FALSE(kv.allocate(b.kv(), 5));  // needs 2 blocks, 1 free
  EXPECT_TRUE(b.block_ids.empty());
  EXPECT_EQ(b.num_computed_tokens, 0);
  EXPECT_EQ(kv.num_free_blocks(), 1);
  EXPECT_EQ(kv.stats().prefix_queries, 20);  // only a's successful admission counted
  EXPECT_FALSE(kv.allocate(b.kv(), int64_t{1} << 62));  // more than the pool, no overflow
  ASSERT_TRUE(kv.allocate(b.kv(), 4));
  kv.check_invariants();
}

TEST(KvCacheManager, PrefixHitsOfZeroPartialAndFullBlocks) {
  KvCacheManager kv(32, 4, true);
  Sequence a = make_request("a", iota_tokens(10));  // blocks [100..103] [104..107], 2 tokens partial
  admit_and_compute(kv, a);
  EXPECT_EQ(kv.stats().prefix_hits, 0);

  Sequence none = make_request("none", iota_tokens(10, 500));
  EXPECT_EQ(kv.find_cached_prefix(none.tokens()).num_tokens, 0);

  auto partial_tokens = iota_tokens(6);  // shares 6 tokens: one full block
  partial_tokens.insert(partial_tokens.end(), {7, 7, 7, 7});
  Sequence partial = make_request("partial", partial_tokens);
  const CachedPrefix p1 = kv.find_cached_prefix(partial.tokens());
  EXPECT_EQ(p1.num_tokens, 4);
  ASSERT_EQ(p1.block_ids.size(), 1u);
  EXPECT_EQ(p1.block_ids[0], a.block_ids[0]);

  Sequence full = make_request("full", iota_tokens(12));  // shares both full blocks
  const CachedPrefix p2 = kv.find_cached_prefix(full.tokens());
  EXPECT_EQ(p2.num_tokens, 8);
  EXPECT_EQ(p2.block_ids, std::vector<int32_t>(a.block_ids.begin(), a.block_ids.begin() + 2));
  ASSERT_TRUE(kv.allocate(full.kv(), 4, &p2));
  EXPECT_EQ(full.num_computed_tokens, 8);
  EXPECT_EQ(full.num_cached_tokens, 8);
  EXPECT_EQ(full.block_ids.size(), 3u);
  EXPECT_EQ(kv.stats().prefix_queries, 10 + 12);
  EXPECT_EQ(kv.stats().prefix_hits, 8);
  kv.check_invariants();
}

TEST(KvCacheManager, FullyCachedSequenceStillComputesItsLastToken) {
  KvCacheManager kv(32, 4, true);
  Sequence a = make_request("a", iota_tokens(8));
  admit_and_compute(kv, a);
  Sequence same = make_request("same", iota_tokens(8));
  EXPECT_EQ(kv.find_cached_prefix(same.tokens()).num_tokens, 4);  // the second block holds the last token
  Sequence longer = make_request("longer", iota_tokens(9));
  EXPECT_EQ(kv.find_cached_prefix(longer.tokens()).num_tokens, 8);
  Sequence one = make_request("one", {100});
  EXPECT_EQ(kv.find_cached_prefix(one.tokens()).num_tokens, 0);
}

TEST(KvCacheManager, PrefixCoversOutputTokens) {
  KvCacheManager kv(32, 4, true);
  Sequence a = make_request("a", iota_tokens(3));
  a.output_tokens = {103, 104, 105, 106, 107};  // as if generated: tokens 100..107
  admit_and_compute(kv, a);
  Sequence b = make_request("b", iota_tokens(10));
  EXPECT_EQ(kv.find_cached_prefix(b.tokens()).num_tokens, 8);
}

TEST(KvCacheManager, DisabledPrefixCachingFindsNothing) {
  KvCacheManager kv(32, 4, false);
  Sequence a = make_request("a", iota_tokens(10));
  admit_and_compute(kv, a);
  Sequence b = make_request("b", iota_tokens(10));
  EXPECT_EQ(kv.find_cached_prefix(b.tokens()).num_tokens, 0);
  kv.free(a.kv());
  EXPECT_FALSE(kv.is_cached(a.block_ids.empty() ? 0 : a.block_ids[0]));
  EXPECT_EQ(kv.stats().prefix_queries, 0);
}

TEST(KvCacheManager, SharedBlocksAreReferenceCounted) {
  KvCacheManager kv(8, 4, true);
  Sequence a = make_request("a", iota_tokens(9));
  admit_and_compute(kv, a);
  Sequence b = make_request("b", iota_tokens(9));
  admit_and_compute(kv, b);
  ASSERT_EQ(b.num_cached_tokens, 8);
  EXPECT_EQ(b.block_ids[0], a.block_ids[0]);
  EXPECT_EQ(b.block_ids[1], a.block_ids[1]);
  EXPECT_NE(b.block_ids[2], a.block_ids[2]);  // partial blocks are never shared
  EXPECT_EQ(kv.ref_count(a.block_ids[0]), 2);
  EXPECT_EQ(kv.num_free_blocks(), 8 - 4);
  const auto shared = a.block_ids;
  kv.free(a.kv());
  EXPECT_EQ(kv.ref_count(shared[0]), 1);
  EXPECT_EQ(kv.ref_count(shared[2]), 0);
  kv.free(b.kv());
  EXPECT_EQ(kv.ref_count(shared[0]), 0);
  EXPECT_TRUE(kv.is_cached(shared[0]));  // free but still reusable
  EXPECT_EQ(kv.num_free_blocks(), 8);
  // A hit on free cached blocks takes them out of the free queue.
  Sequence c = make_request("c", iota_tokens(9));
  const CachedPrefix p = kv.find_cached_prefix(c.tokens());
  ASSERT_EQ(p.num_tokens, 8);
  ASSERT_TRUE(kv.allocate(c.kv(), 1, &p));
  EXPECT_EQ(kv.num_free_blocks(), 8 - 3);
  EXPECT_EQ(kv.ref_count(shared[0]), 1);
  kv.check_invariants();
}

TEST(KvCacheManager, HitOnFreeCachedBlocksCountsThemAgainstTheFreePool) {
  KvCacheManager kv(3, 4, true);
  Sequence a = make_request("a", iota_tokens(9));
  admit_and_compute(kv, a);  // 3 blocks, 2 cached
  kv.free(a.kv());
  Sequence b = make_request("b", iota_tokens(13));  // hit 8, needs 2 more blocks, only 1 beyond the prefix
  const CachedPrefix p = kv.find_cached_prefix(b.tokens());
  ASSERT_EQ(p.num_tokens, 8);
  EXPECT_FALSE(kv.allocate(b.kv(), 5, &p));
  EXPECT_TRUE(b.block_ids.empty());
  EXPECT_EQ(kv.num_free_blocks(), 3);
  EXPECT_TRUE(kv.allocate(b.kv(), 4, &p));
  kv.check_invariants();
}

// Every block collides with every other: only the stored token ids tell them apart.
uint64_t constant_hash(uint64_t, std::span<const int64_t>) { return 42; }
// Ignores the parent: equal blocks after different prefixes collide.
uint64_t parentless_hash(uint64_t, std::span<const int64_t> tokens) {
  uint64_t h = 7;
  for (int64_t t : tokens) h = h * 31 + static_cast<uint64_t>(t);
  return h;
}

TEST(KvCacheManager, HashCollisionOfBlockContentsNeverHits) {
  KvCacheManager kv(16, 4, true, constant_hash);
  Sequence a = make_request("a", iota_tokens(9));
  admit_and_compute(kv, a);
  Sequence b = make_request("b", iota_tokens(9, 200));
  EXPECT_EQ(kv.find_cached_prefix(b.tokens()).num_tokens, 0);  // same hash, other tokens
  Sequence c = make_request("c", iota_tokens(9));
  EXPECT_EQ(kv.find_cached_prefix(c.tokens()).num_tokens, 4);  // the first block is the one table entry
}

TEST(KvCacheManager, HashCollisionOfPrefixesNeverHits) {
  KvCacheManager kv(16, 4, true, parentless_hash);
  // a = X Y ., c = Z .: then b = Z Y . finds Z, and Y's entry has the hash b's second block
  // wants, but it follows X, not Z.
  Sequence a = make_request("a", {1, 1, 1, 1, 5, 5, 5, 5, 0});
  admit_and_compute(kv, a);
  Sequence c = make_request("c", {2, 2, 2, 2, 0});
  admit_and_compute(kv, c);
  Sequence b = make_request("b", {2, 2, 2, 2, 5, 5, 5, 5, 0});
  const CachedPrefix p = kv.find_cached_prefix(b.tokens());
  EXPECT_EQ(p.num_tokens, 4);
  ASSERT_EQ(p.block_ids.size(), 1u);
  EXPECT_EQ(p.block_ids[0], c.block_ids[0]);
  Sequence a2 = make_request("a2", {1, 1, 1, 1, 5, 5, 5, 5, 0});
  EXPECT_EQ(kv.find_cached_prefix(a2.tokens()).num_tokens, 8);
}

TEST(KvCacheManager, SamePrefixComputedTwiceChainsThroughTheFirstCopy) {
  KvCacheManager kv(16, 4, true);
  // Both admitted before either cached anything, so each computes block 0 itself.
  Sequence a = make_request("a", iota_tokens(6));
  Sequence b = make_request("b", iota_tokens(10));
  ASSERT_TRUE(kv.allocate(a.kv(), 6));
  ASSERT_TRUE(kv.allocate(b.kv(), 10));
  a.num_computed_tokens = 6;
  b.num_computed_tokens = 10;
  kv.cache_full_blocks(a.kv());
  kv.cache_full_blocks(b.kv());
  EXPECT_TRUE(kv.is_cached(a.block_ids[0]));
  EXPECT_FALSE(kv.is_cached(b.block_ids[0]));  // a duplicate: a's copy is the entry
  EXPECT_TRUE(kv.is_cached(b.block_ids[1]));
  Sequence c = make_request("c", iota_tokens(11));
  const CachedPrefix p = kv.find_cached_prefix(c.tokens());
  EXPECT_EQ(p.block_ids, (std::vector<int32_t>{a.block_ids[0], b.block_ids[1]}));
  kv.check_invariants();
  // The duplicate is worth nothing once freed: it is reused before any cached block.
  const int32_t duplicate = b.block_ids[0];
  kv.free(b.kv());
  EXPECT_EQ(kv.free_blocks_in_eviction_order().front(), duplicate);
  kv.check_invariants();
}

TEST(KvCacheManager, EvictionOrderUncachedFirstThenLeastRecentlyFreedTailFirst) {
  KvCacheManager kv(6, 2, true);
  Sequence a = make_request("a", iota_tokens(5, 100));  // 3 blocks: 2 cached + 1 partial
  Sequence b = make_request("b", iota_tokens(5, 200));
  admit_and_compute(kv, a);
  admit_and_compute(kv, b);
  const auto ab = a.block_ids, bb = b.block_ids;
  kv.free(a.kv());
  kv.free(b.kv());
  const std::vector<int32_t> expected = {bb[2], ab[2], ab[1], ab[0], bb[1], bb[0]};
  EXPECT_EQ(kv.free_blocks_in_eviction_order(), expected);
  // Reusing 4 blocks evicts a's cached blocks and keeps b's.
  Sequence c = make_request("c", iota_tokens(8, 300));
  ASSERT_TRUE(kv.allocate(c.kv(), 8));
  EXPECT_EQ(c.block_ids, std::vector<int32_t>(expected.begin(), expected.begin() + 4));
  EXPECT_EQ(kv.stats().evictions, 2);
  Sequence a2 = make_request("a2", iota_tokens(5, 100));
  Sequence b2 = make_request("b2", iota_tokens(5, 200));
  EXPECT_EQ(kv.find_cached_prefix(a2.tokens()).num_tokens, 0);
  EXPECT_EQ(kv.find_cached_prefix(b2.tokens()).num_tokens, 4);
  kv.check_invariants();
}

// A child can outlive its parent in the cache when the parent's entry was computed by
// another request (a duplicate). The orphan must never be hit, and must give way to a new
// entry for the same prefix.
TEST(KvCacheManager, OrphanedEntryIsNeverHitAndGetsReplaced) {
  KvCacheManager kv(8, 2, true);
  Sequence a = make_request("a", {1, 1, 9});
  Sequence b = make_request("b", {1, 1, 2, 2, 3, 3, 9});
  Sequence filler = make_request("filler", {5, 5, 5, 5});
  ASSERT_TRUE(kv.allocate(a.kv(), 3));
  ASSERT_TRUE(kv.allocate(b.kv(), 7));
  ASSERT_TRUE(kv.allocate(filler.kv(), 4));
  ASSERT_EQ(kv.num_free_blocks(), 0);
  a.num_computed_tokens = 3;
  b.num_computed_tokens = 4;
  kv.cache_full_blocks(a.kv());  // a's [1 1] is the entry
  kv.cache_full_blocks(b.kv());  // b's [1 1] is a duplicate; b's [2 2] follows a's [1 1]
  ASSERT_TRUE(kv.is_cached(b.block_ids[1]));
  kv.free(a.kv());
  Sequence x = make_request("x", {7, 7, 7});
  ASSERT_TRUE(kv.allocate(x.kv(), 3));  // evicts a's [1 1]: b's [2 2] is now an orphan
  EXPECT_EQ(kv.stats().evictions, 1);
  Sequence probe = make_request("probe", {1, 1, 2, 2, 3});
  EXPECT_EQ(kv.find_cached_prefix(probe.tokens()).num_tokens, 0);
  b.num_computed_tokens = 6;
  kv.cache_full_blocks(b.kv());
  kv.check_invariants();

  kv.free(x.kv());
  kv.free(filler.kv());
  Sequence d = make_request("d", {1, 1, 2, 2, 5});
  admit_and_compute(kv, d);
  EXPECT_EQ(d.num_cached_tokens, 0);
  EXPECT_TRUE(kv.is_cached(d.block_ids[1]));   // replaced the orphan
  EXPECT_FALSE(kv.is_cached(b.block_ids[1]));  // still held by b, but no longer an entry
  EXPECT_EQ(kv.find_cached_prefix(probe.tokens()).block_ids, (std::vector<int32_t>{d.block_ids[0], d.block_ids[1]}));
  kv.free(b.kv());
  kv.check_invariants();
  EXPECT_EQ(kv.find_cached_prefix(probe.tokens()).num_tokens, 4);
}

TEST(KvCacheManager, ResetForgetsEveryPrefix) {
  KvCacheManager kv(8, 4, true);
  Sequence a = make_request("a", iota_tokens(9));
  admit_and_compute(kv, a);
  expect_error([&] { kv.reset_prefix_cache(); }, "still referenced");
  kv.free(a.kv());
  kv.reset_prefix_cache();
  Sequence b = make_request("b", iota_tokens(9));
  EXPECT_EQ(kv.find_cached_prefix(b.tokens()).num_tokens, 0);
  EXPECT_EQ(kv.num_free_blocks(), 8);
  kv.check_invariants();
}

TEST(KvCacheManager, BadArgumentsGiveClearErrors) {
  expect_error([] { KvCacheManager(-1, 16, true); }, "num_blocks");
  expect_error([] { KvCacheManager(0, 16, true); }, "num_blocks");
  expect_error([] { KvCacheManager(4, 0, true); }, "block_size");
  expect_error([] { KvCacheManager(int64_t{1} << 40, 16, true); }, "num_blocks");
  expect_error([] { KvCacheManager(1 << 30, int64_t{1} << 40, true); }, "overflows");
  expect_error([] { KvCacheManager(4, 4, true, nullptr); }, "hash function");

  KvCacheManager kv(8, 4, true);
  Sequence a = make_request("a", iota_tokens(9));
  expect_error([&] { kv.allocate(a.kv(), -1); }, "num_new_tokens must be >= 0");
  expect_error([&] { kv.ref_count(8); }, "out of range");
  admit_and_compute(kv, a);

  Sequence b = make_request("b", iota_tokens(9));
  CachedPrefix p = kv.find_cached_prefix(b.tokens());
  ASSERT_EQ(p.num_tokens, 8);
  CachedPrefix wrong_count = p;
  wrong_count.num_tokens = 5;
  expect_error([&] { kv.allocate(b.kv(), 1, &wrong_count); }, "claims");
  CachedPrefix foreign = p;
  std::swap(foreign.block_ids[0], foreign.block_ids[1]);
  expect_error([&] { kv.allocate(b.kv(), 1, &foreign); }, "no longer holds that prefix");
  CachedPrefix out_of_range = p;
  out_of_range.block_ids[0] = 99;
  expect_error([&] { kv.allocate(b.kv(), 1, &out_of_range); }, "out of range");
  Sequence other = make_request("other", iota_tokens(9, 300));
  expect_error([&] { kv.allocate(other.kv(), 1, &p); }, "no longer holds that prefix");
  EXPECT_TRUE(b.block_ids.empty());
  ASSERT_TRUE(kv.allocate(b.kv(), 1, &p));
  expect_error([&] { kv.allocate(b.kv(), 1, &p); }, "can only be taken by a request holding none");

  KvCacheManager plain(8, 4, false);
  Sequence c = make_request("c", iota_tokens(9));
  expect_error([&] { plain.allocate(c.kv(), 1, &p); }, "prefix caching is off");
  kv.check_invariants();
}

// ---- randomised stress against a model of the pool --------------------------------------

struct StressConfig {
  int64_t num_blocks, block_size;
  bool prefix_caching;
  BlockHashFn hash;
};

// A tiny hash that collides all the time, to drive the collision and stale-entry paths.
uint64_t tiny_hash(uint64_t parent, std::span<const int64_t> tokens) {
  uint64_t h = parent % 3;
  for (int64_t t : tokens) h += static_cast<uint64_t>(t);
  return h % 5;
}

void run_stress(const StressConfig& cfg, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << "seed " << seed << " (FK_TEST_SEED base reproduces it), blocks "
                                    << cfg.num_blocks << ", block_size " << cfg.block_size << ", caching "
                                    << cfg.prefix_caching);
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  KvCacheManager kv(cfg.num_blocks, cfg.block_size, cfg.prefix_caching, cfg.hash);
  const int64_t bs = cfg.block_size;
  // What each slot of each block holds: written by the fake "model" when it computes a token.
  std::vector<int64_t> slots(static_cast<size_t>(cfg.num_blocks * bs), -1);
  auto slot = [&](const Sequence& r, int64_t pos) -> int64_t& {
    return slots[static_cast<size_t>(r.block_ids[static_cast<size_t>(pos / bs)] * bs + pos % bs)];
  };
  // A few shared beginnings so that prefixes repeat.
  std::vector<std::vector<int64_t>> bases(3);
  for (auto& b : bases)
    for (int64_t i = 0; i < 3 * bs + 1; ++i) b.push_back(uniform(0, 3));
  std::vector<std::unique_ptr<Sequence>> live;
  int next_id = 0;

  // Computes n tokens of r after a successful allocate; never writes into a shared block.
  auto compute = [&](Sequence& r, int64_t n) {
    for (int64_t p = r.num_computed_tokens; p < r.num_computed_tokens + n; ++p) {
      const int32_t b = r.block_ids[static_cast<size_t>(p / bs)];
      ASSERT_EQ(kv.ref_count(b), 1) << "writing token " << p << " of " << r.id << " into shared block " << b;
      slot(r, p) = r.token_at(p);
    }
    r.num_computed_tokens += n;
    kv.cache_full_blocks(r.kv());
  };

  for (int op = 0; op < 4000; ++op) {
    const int64_t kind = uniform(0, 9);
    if (kind < 3 || live.empty()) {  // a new request
      auto r = std::make_unique<Sequence>();
      r->id = "r" + std::to_string(next_id++);
      const auto& base = bases[static_cast<size_t>(uniform(0, 2))];
      r->prompt_tokens.assign(base.begin(), base.begin() + uniform(0, static_cast<int64_t>(base.size())));
      for (int64_t i = uniform(r->prompt_tokens.empty() ? 1 : 0, 2 * bs); i > 0; --i)
        r->prompt_tokens.push_back(uniform(0, 3));
      const CachedPrefix prefix = kv.find_cached_prefix(r->tokens());
      const int64_t n = uniform(1, r->total_tokens() - prefix.num_tokens);
      const int64_t free_before = kv.num_free_blocks();
      if (!kv.allocate(r->kv(), n, &prefix)) {
        EXPECT_TRUE(r->block_ids.empty());
        EXPECT_EQ(kv.num_free_blocks(), free_before);
        continue;
      }
      EXPECT_EQ(r->num_computed_tokens, prefix.num_tokens);
      compute(*r, n);
      live.push_back(std::move(r));
    } else if (kind < 8) {  // a step of a live request
      Sequence& r = *live[static_cast<size_t>(uniform(0, static_cast<int64_t>(live.size()) - 1))];
      if (r.num_computed_tokens == r.total_tokens()) {
        if (r.total_tokens() >= 6 * bs) continue;
        r.output_tokens.push_back(uniform(0, 3));  // "sampled"
      }
      const int64_t n = uniform(1, r.total_tokens() - r.num_computed_tokens);
      const auto held = r.block_ids;
      const int64_t free_before = kv.num_free_blocks();
      if (!kv.allocate(r.kv(), n)) {
        EXPECT_EQ(r.block_ids, held);
        EXPECT_EQ(kv.num_free_blocks(), free_before);
        continue;
      }
      compute(r, n);
    } else {  // a request finishes (or is preempted)
      const auto i = static_cast<size_t>(uniform(0, static_cast<int64_t>(live.size()) - 1));
      kv.free(live[i]->kv());
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (::testing::Test::HasFatalFailure()) return;

    kv.check_invariants();
    std::map<int32_t, int32_t> holders;
    for (const auto& r : live) {
      ASSERT_GE(static_cast<int64_t>(r->block_ids.size()) * bs, r->num_computed_tokens) << r->id;
      std::vector<int32_t> mine = r->block_ids;
      std::sort(mine.begin(), mine.end());
      ASSERT_EQ(std::adjacent_find(mine.begin(), mine.end()), mine.end()) << r->id << " holds a block twice";
      for (int32_t b : r->block_ids) ++holders[b];
      // Every computed token's K/V is where r's block table says: no block was handed to
      // another sequence, and every prefix hit held exactly r's tokens.
      for (int64_t p = 0; p < r->num_computed_tokens; ++p)
        ASSERT_EQ(slot(*r, p), r->token_at(p)) << r->id << " token " << p << " (op " << op << ")";
    }
    int64_t unreferenced = 0;
    for (int32_t b = 0; b < cfg.num_blocks; ++b) {
      const auto it = holders.find(b);
      const int32_t expected = it == holders.end() ? 0 : it->second;
      ASSERT_EQ(kv.ref_count(b), expected) << "block " << b << " (op " << op << ")";
      unreferenced += expected == 0;
    }
    ASSERT_EQ(kv.num_free_blocks(), unreferenced);
  }
  for (auto& r : live) kv.free(r->kv());
  EXPECT_EQ(kv.num_free_blocks(), cfg.num_blocks);
  kv.check_invariants();
  if (cfg.prefix_caching) {
    EXPECT_GT(kv.stats().prefix_hits, 0) << "the stress test should exercise prefix hits";
    EXPECT_GT(kv.stats().evictions, 0) << "the stress test should exercise evictions";
  }
}

TEST(KvCacheManager, RandomisedStressMatchesAModelOfThePool) {
  const uint64_t seed = test::seed_for("KvCacheManager.RandomisedStressMatchesAModelOfThePool");
  const StressConfig configs[] = {
      {12, 4, true, chained_block_hash}, {7, 1, true, chained_block_hash}, {20, 3, true, chained_block_hash},
      {12, 4, false, chained_block_hash}, {12, 2, true, tiny_hash},        {9, 3, true, tiny_hash},
  };
  for (size_t i = 0; i < std::size(configs); ++i) {
    run_stress(configs[i], seed + i);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace fk::engine
