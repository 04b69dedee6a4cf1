#include "runtime/state/kv_cache_manager.h"

#include <algorithm>
#include <limits>

#include "fk/status.h"

namespace fk::engine {

namespace {

// Validates the pool's shape before any member is built from it.
int32_t checked_num_blocks(int64_t num_blocks, int64_t block_size) {
  FK_CHECK(num_blocks >= 1 && num_blocks <= std::numeric_limits<int32_t>::max(),
           "KV cache num_blocks must be in [1, 2^31), got ", num_blocks);
  FK_CHECK(block_size >= 1, "KV cache block_size must be >= 1, got ", block_size);
  FK_CHECK(block_size <= std::numeric_limits<int64_t>::max() / num_blocks,
           "KV cache of ", num_blocks, " blocks of ", block_size, " tokens overflows a token count");
  return static_cast<int32_t>(num_blocks);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

KvCacheManager::KvCacheManager(int64_t num_blocks, int64_t block_size, bool enable_prefix_caching,
                               BlockHashFn hash_fn)
    : block_size_(block_size),
      enable_prefix_caching_(enable_prefix_caching),
      hash_fn_(hash_fn),
      blocks_(static_cast<size_t>(checked_num_blocks(num_blocks, block_size))),
      free_(static_cast<int32_t>(num_blocks)) {
  FK_CHECK(hash_fn != nullptr, "KV cache block hash function must not be null");
}

bool KvCacheManager::is_live(PrefixLink link) const {
  if (link == kRootLink) return true;
  if (link.block < 0) return false;
  const Block& b = block(link.block);
  return b.registered && b.generation == link.generation;
}

void KvCacheManager::block_tokens(const SequenceTokens& tokens, int64_t block_index,
                                  std::vector<int64_t>& out) const {
  out.resize(static_cast<size_t>(block_size_));
  const int64_t first = block_index * block_size_;
  for (int64_t j = 0; j < block_size_; ++j) out[static_cast<size_t>(j)] = tokens.at(first + j);
}

CachedPrefix KvCacheManager::find_cached_prefix(const SequenceTokens& seq_tokens) const {
  CachedPrefix out;
  if (!enable_prefix_caching_ || seq_tokens.total() <= 1) return out;
  // At least the last token is left to compute: its logits give the next token.
  const int64_t max_blocks = (seq_tokens.total() - 1) / block_size_;
  std::vector<int64_t> tokens;
  uint64_t hash = kRootBlockHash;
  PrefixLink parent = kRootLink;
  for (int64_t i = 0; i < max_blocks; ++i) {
    block_tokens(seq_tokens, i, tokens);
    hash = hash_fn_(hash, tokens);
    const auto it = cached_.find(hash);
    if (it == cached_.end()) break;
    const Block& b = block(it->second);
    // The hash matched; the parent link and the tokens make the match exact.
    if (b.parent != parent || b.tokens != tokens) break;
    out.block_ids.push_back(it->second);
    parent = PrefixLink{it->second, b.generation};
  }
  out.num_tokens = static_cast<int64_t>(out.block_ids.size()) * block_size_;
  return out;
}

// A prefix handed to allocate must still be what find_cached_prefix(s.tokens) would return
// a prefix of: stale or foreign block ids would give s another sequence's K/V.
void KvCacheManager::check_prefix(const KvSequence& s, const CachedPrefix& prefix) const {
  FK_CHECK(enable_prefix_caching_, "request ", s.id, ": a cached prefix was given but prefix caching is off");
  FK_CHECK(s.num_computed_tokens == 0, "request ", s.id, " holds no blocks but has ", s.num_computed_tokens,
           " computed tokens");
  const auto n = static_cast<int64_t>(prefix.block_ids.size());
  FK_CHECK(prefix.num_tokens == n * block_size_, "cached prefix of ", n, " blocks claims ", prefix.num_tokens,
           " tokens (block_size ", block_size_, ")");
  FK_CHECK(prefix.num_tokens < s.tokens.total(), "cached prefix of ", prefix.num_tokens,
           " tokens leaves nothing to compute for request ", s.id, " of ", s.tokens.total(), " tokens");
  std::vector<int64_t> tokens;
  PrefixLink parent = kRootLink;
  for (int64_t i = 0; i < n; ++i) {
    const int32_t id = prefix.block_ids[static_cast<size_t>(i)];
    FK_CHECK(id >= 0 && id < num_blocks(), "cached prefix block id ", id, " is out of range [0, ", num_blocks(), ")");
    const Block& b = block(id);
    block_tokens(s.tokens, i, tokens);
    FK_CHECK(b.registered && b.parent == parent && b.tokens == tokens, "cached prefix block ", id, " (block ", i,
             " of request ", s.id, ") no longer holds that prefix; call find_cached_prefix again");
    parent = PrefixLink{id, b.generation};
  }
}

bool KvCacheManager::allocate(const KvSequence& s, int64_t num_new_tokens, const CachedPrefix* prefix) {
  FK_CHECK(num_new_tokens >= 0, "request ", s.id, ": num_new_tokens must be >= 0, got ", num_new_tokens);
  FK_CHECK(s.num_computed_tokens >= 0 && s.num_computed_tokens <= s.tokens.total(), "request ", s.id, " has ",
           s.num_computed_tokens, " computed tokens out of ", s.tokens.total());
  const bool admitting = s.block_ids.empty();
  const bool use_prefix = prefix != nullptr && !prefix->block_ids.empty();
  FK_CHECK(!use_prefix || admitting, "request ", s.id, " already holds ", s.block_ids.size(),
           " blocks; a cached prefix can only be taken by a request holding none");
  if (use_prefix) check_prefix(s, *prefix);

  const int64_t computed = use_prefix ? prefix->num_tokens : s.num_computed_tokens;
  const int64_t held = static_cast<int64_t>(s.block_ids.size()) + (use_prefix ? prefix->num_tokens / block_size_ : 0);
  FK_CHECK(held >= ceil_div(computed, block_size_), "request ", s.id, " holds ", held, " blocks for ", computed,
           " computed tokens (block_size ", block_size_, ")");
  if (num_new_tokens > num_blocks() * block_size_ - computed) return false;  // more than the whole pool
  const int64_t new_blocks = std::max<int64_t>(0, ceil_div(computed + num_new_tokens, block_size_) - held);
  int64_t revived = 0;  // cached blocks of the prefix that sit in the free queue
  if (use_prefix)
    for (int32_t id : prefix->block_ids) revived += block(id).ref_count == 0;
  if (new_blocks + revived > free_.size()) return false;

  if (use_prefix) {
    for (int32_t id : prefix->block_ids) {
      Block& b = block(id);
      if (b.ref_count++ == 0) free_.remove(id);
      s.block_ids.push_back(id);
    }
    s.num_computed_tokens = prefix->num_tokens;
  }
  if (admitting) {
    s.num_cached_tokens = use_prefix ? prefix->num_tokens : 0;
    if (enable_prefix_caching_) {
      stats_.prefix_queries += s.tokens.total();
      stats_.prefix_hits += s.num_cached_tokens;
    }
  }
  for (int64_t i = 0; i < new_blocks; ++i) s.block_ids.push_back(take_free_block());
  return true;
}

int32_t KvCacheManager::take_free_block() {
  const int32_t id = free_.pop_front();
  Block& b = block(id);
  if (b.registered) ++stats_.evictions;
  forget(id);
  b.ref_count = 1;
  return id;
}

void KvCacheManager::unregister(int32_t id) {
  Block& b = block(id);
  if (!b.registered) return;
  const auto it = cached_.find(b.hash);
  if (it == cached_.end() || it->second != id)
    FK_FAIL(FK_ERR_INTERNAL, "KV cache: registered block ", id, " is missing from the prefix table");
  cached_.erase(it);
  b.registered = false;
  b.canonical = kNoLink;
  b.parent = kNoLink;
  b.tokens.clear();
  ++b.generation;  // links to the old identity go stale
}

void KvCacheManager::forget(int32_t id) {
  unregister(id);
  Block& b = block(id);
  b.hashed = false;
  b.hash = 0;
  b.canonical = kNoLink;
  ++b.generation;
}

void KvCacheManager::cache_full_blocks(const KvSequence& s) {
  if (!enable_prefix_caching_) return;
  FK_CHECK(s.num_computed_tokens >= 0 && s.num_computed_tokens <= s.tokens.total(), "request ", s.id, " has ",
           s.num_computed_tokens, " computed tokens out of ", s.tokens.total());
  // Only blocks whose every token id is known: with asynchronous scheduling a computed
  // position may hold a token the update dropped (an aborted request's last sample).
  const int64_t num_full = std::min(s.num_computed_tokens, s.tokens.known()) / block_size_;
  FK_CHECK(num_full <= static_cast<int64_t>(s.block_ids.size()), "request ", s.id, " has ", s.num_computed_tokens,
           " computed tokens but only ", s.block_ids.size(), " blocks");
  // Blocks get hashed in token order and keep their hash while referenced, so the ones
  // still to hash are a suffix of the full ones: walk back to its start.
  int64_t i = num_full;
  while (i > 0 && !block(s.block_ids[static_cast<size_t>(i - 1)]).hashed) --i;
  for (; i < num_full; ++i) register_block(s, i);
}

void KvCacheManager::register_block(const KvSequence& s, int64_t i) {
  const int32_t id = s.block_ids[static_cast<size_t>(i)];
  Block& b = block(id);
  uint64_t parent_hash = kRootBlockHash;
  PrefixLink parent = kRootLink;
  if (i > 0) {
    const Block& p = block(s.block_ids[static_cast<size_t>(i - 1)]);
    parent_hash = p.hash;
    parent = p.canonical;
  }
  std::vector<int64_t> tokens;
  block_tokens(s.tokens, i, tokens);
  b.hashed = true;
  b.hash = hash_fn_(parent_hash, tokens);
  b.canonical = kNoLink;
  // A prefix whose beginning is not cached could never be reached by a lookup.
  if (!is_live(parent)) return;
  if (const auto it = cached_.find(b.hash); it != cached_.end()) {
    const Block& c = block(it->second);
    if (c.parent == parent && c.tokens == tokens) {
      // Another sequence computed the same prefix first (both were admitted before either
      // had cached it): the older block stays the cache entry; children link to it.
      b.canonical = PrefixLink{it->second, c.generation};
      return;
    }
    // A hash collision with a different prefix that is still reachable: keep the older one.
    if (is_live(c.parent)) return;
    // The entry's own parent is gone, so no lookup can reach it any more: replace it. A
    // holder keeps the stale block's hash (its later blocks chain on it) but not its entry.
    const int32_t stale = it->second;
    unregister(stale);
    if (block(stale).ref_count == 0) {
      forget(stale);
      free_.remove(stale);
      free_.push_front(stale);  // worth nothing now: reuse it first
    }
  }
  cached_[b.hash] = id;
  b.registered = true;
  b.parent = parent;
  b.tokens = std::move(tokens);
  b.canonical = PrefixLink{id, b.generation};
}

void KvCacheManager::free(const KvSequence& s) {
  // Tail first, so that within one sequence the tail is evicted before the head.
  for (auto it = s.block_ids.rbegin(); it != s.block_ids.rend(); ++it) {
    const int32_t id = *it;
    FK_CHECK(id >= 0 && id < num_blocks(), "request ", s.id, " holds block id ", id, " out of range");
    Block& b = block(id);
    if (b.ref_count <= 0) FK_FAIL(FK_ERR_INTERNAL, "KV cache: request ", s.id, " frees block ", id, " nobody holds");
    if (--b.ref_count > 0) continue;
    if (b.registered) {
      free_.push_back(id);
    } else {
      forget(id);
      free_.push_front(id);
    }
  }
  s.block_ids.clear();
}

void KvCacheManager::reset_prefix_cache() {
  FK_CHECK(num_free_blocks() == num_blocks(), "reset_prefix_cache needs every block free; ",
           num_blocks() - num_free_blocks(), " are still referenced");
  for (int32_t id = 0; id < static_cast<int32_t>(num_blocks()); ++id) forget(id);
  free_ = FreeBlockQueue(static_cast<int32_t>(num_blocks()));
}

int32_t KvCacheManager::ref_count(int32_t block_id) const {
  FK_CHECK(block_id >= 0 && block_id < num_blocks(), "block id ", block_id, " out of range [0, ", num_blocks(), ")");
  return block(block_id).ref_count;
}

bool KvCacheManager::is_cached(int32_t block_id) const {
  FK_CHECK(block_id >= 0 && block_id < num_blocks(), "block id ", block_id, " out of range [0, ", num_blocks(), ")");
  return block(block_id).registered;
}

void KvCacheManager::check_invariants() const {
  int64_t num_zero = 0, num_registered = 0;
  for (int32_t id = 0; id < static_cast<int32_t>(num_blocks()); ++id) {
    const Block& b = block(id);
    if (b.ref_count < 0) FK_FAIL(FK_ERR_INTERNAL, "KV cache: block ", id, " has reference count ", b.ref_count);
    num_zero += b.ref_count == 0;
    if ((b.ref_count == 0) != free_.contains(id))
      FK_FAIL(FK_ERR_INTERNAL, "KV cache: block ", id, " with reference count ", b.ref_count,
              free_.contains(id) ? " is" : " is not", " in the free queue");
    if (b.registered) {
      ++num_registered;
      const auto it = cached_.find(b.hash);
      if (!b.hashed || it == cached_.end() || it->second != id ||
          b.tokens.size() != static_cast<size_t>(block_size_) || !(b.canonical == PrefixLink{id, b.generation}))
        FK_FAIL(FK_ERR_INTERNAL, "KV cache: registered block ", id, " is inconsistent with the prefix table");
    } else if (b.ref_count == 0 && b.hashed) {
      FK_FAIL(FK_ERR_INTERNAL, "KV cache: free block ", id, " keeps a hash but is not cached");
    }
  }
  if (num_zero != free_.size())
    FK_FAIL(FK_ERR_INTERNAL, "KV cache: ", num_zero, " blocks unreferenced but ", free_.size(), " in the free queue");
  if (num_registered != static_cast<int64_t>(cached_.size()))
    FK_FAIL(FK_ERR_INTERNAL, "KV cache: ", num_registered, " registered blocks but ", cached_.size(), " table entries");
}

}  // namespace fk::engine
