// The paged KV cache's block pool: which blocks each sequence holds, and which full blocks
// keep the K/V of a known token prefix so that a later sequence with the same prefix reuses
// them instead of computing them again (prefix caching). Sequences come as KvSequence
// (kv_sequence.h): their owner keeps the block table and the counts, the pool updates them.
//
// A block's life: free (reference count 0) -> held by one or more sequences -> when its
// tokens are all computed, cache_full_blocks registers it under the chained hash of its
// prefix -> when its last holder frees it, it stays registered (a cache hit can take it
// back) until the pool needs a block and evicts it.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "runtime/state/block_hash.h"
#include "runtime/state/free_block_queue.h"
#include "runtime/state/kv_sequence.h"

namespace fk::engine {

struct CachedPrefix {
  std::vector<int32_t> block_ids;  // in token order
  int64_t num_tokens = 0;          // block_ids.size() * block_size
};

struct KvCacheStats {
  // Counted in tokens, once per admission (allocate on a sequence holding no blocks) while
  // prefix caching is on: the sequence's total tokens, and those its prefix hit covered.
  int64_t prefix_queries = 0;
  int64_t prefix_hits = 0;
  int64_t evictions = 0;  // registered blocks dropped from the cache to be reused
};

class KvCacheManager {
 public:
  // hash_fn: the chained block hash; replaceable only so that tests can force collisions.
  KvCacheManager(int64_t num_blocks, int64_t block_size, bool enable_prefix_caching,
                 BlockHashFn hash_fn = chained_block_hash);

  int64_t num_blocks() const { return static_cast<int64_t>(blocks_.size()); }
  int64_t block_size() const { return block_size_; }
  // Blocks with reference count 0, cached ones included (they are reusable).
  int64_t num_free_blocks() const { return free_.size(); }
  bool prefix_caching() const { return enable_prefix_caching_; }

  // The longest prefix of FULL blocks of a sequence's tokens (prompt and outputs) that is
  // cached, capped so that at least one token stays to be computed (a fully cached prompt
  // still needs its last token's logits). Takes no references. Empty without prefix caching.
  CachedPrefix find_cached_prefix(const SequenceTokens& tokens) const;

  // Gives s blocks for its first s.num_computed_tokens + num_new_tokens tokens. When s holds
  // no blocks and `prefix` (from find_cached_prefix(s.tokens), with no allocation in
  // between) is not empty, s first takes references on its blocks, and s.num_computed_tokens
  // and s.num_cached_tokens become prefix->num_tokens. Returns false and changes nothing
  // when there are not enough free blocks.
  bool allocate(const KvSequence& s, int64_t num_new_tokens, const CachedPrefix* prefix = nullptr);

  // After a step computed s's tokens up to s.num_computed_tokens: registers each block that
  // is now full under its chained hash, so that later sequences with the same prefix reuse it.
  void cache_full_blocks(const KvSequence& s);

  // Drops s's references and clears s.block_ids (a second call does nothing). Registered
  // blocks stay cached until evicted. Eviction order, first to last: blocks that hold no
  // cached prefix (they are worth nothing), then cached blocks least recently freed first;
  // a sequence's blocks are freed tail first, since a long prefix is less likely to be shared
  // than its beginning and a block is unreachable once its parent is gone.
  void free(const KvSequence& s);

  // Forgets every cached prefix. Only valid while every block is free.
  void reset_prefix_cache();

  const KvCacheStats& stats() const { return stats_; }

  // Inspection for tests and invariant checks.
  int32_t ref_count(int32_t block_id) const;
  bool is_cached(int32_t block_id) const;  // registered under a prefix hash
  std::vector<int32_t> free_blocks_in_eviction_order() const { return free_.to_vector(); }
  // Throws fk::Error (FK_ERR_INTERNAL) when the pool's bookkeeping is inconsistent.
  // O(num_blocks): for tests and debugging, not for every step.
  void check_invariants() const;

 private:
  // Names "the cached block standing for a prefix" such that a later change of the block's
  // identity (eviction, reuse) makes the link stale instead of silently pointing elsewhere.
  struct PrefixLink {
    int32_t block;
    uint64_t generation;
    bool operator==(const PrefixLink&) const = default;
  };
  static constexpr PrefixLink kRootLink{-1, 0};  // the empty prefix, parent of every first block
  static constexpr PrefixLink kNoLink{-2, 0};    // a prefix that is not cached

  struct Block {
    int32_t ref_count = 0;
    uint64_t generation = 0;  // bumped whenever the block stops standing for a cached prefix
    // Set once the block is full of computed tokens of a sequence that holds it:
    bool hashed = false;
    uint64_t hash = 0;                // chained hash of the prefix ending with this block
    PrefixLink canonical = kNoLink;   // the registered block for that prefix: itself, an older
                                      // block with the same content, or none (a collision)
    // Only while registered (the cache entry for `hash`): what a hit compares besides the
    // hash, so that a hash collision can never return another prefix's K/V.
    bool registered = false;
    PrefixLink parent = kNoLink;  // the registered block of the prefix one block shorter
    std::vector<int64_t> tokens;  // this block's block_size token ids
  };

  Block& block(int32_t id) { return blocks_[static_cast<size_t>(id)]; }
  const Block& block(int32_t id) const { return blocks_[static_cast<size_t>(id)]; }
  bool is_live(PrefixLink link) const;
  void block_tokens(const SequenceTokens& tokens, int64_t block_index, std::vector<int64_t>& out) const;
  void register_block(const KvSequence& s, int64_t block_index);
  void unregister(int32_t id);  // removes the block's prefix-table entry, if any
  void forget(int32_t id);      // unregister, and drop its hash too (a block nobody holds)
  int32_t take_free_block();        // pops the next block to reuse, evicting it if cached
  void check_prefix(const KvSequence& s, const CachedPrefix& prefix) const;

  int64_t block_size_;
  bool enable_prefix_caching_;
  BlockHashFn hash_fn_;
  std::vector<Block> blocks_;
  FreeBlockQueue free_;
  std::unordered_map<uint64_t, int32_t> cached_;  // prefix hash -> registered block
  KvCacheStats stats_;
};

}  // namespace fk::engine
