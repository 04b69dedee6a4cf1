// Chained hashes of full KV-cache blocks: block i's hash covers block i-1's hash and the
// block_size token ids of block i, so equal hashes at position i stand for equal whole
// prefixes (up to collisions, which the cache guards against separately).
#pragma once
#include <cstdint>
#include <span>

namespace fk::engine {

// hash(parent block's hash, this block's token ids). Replaceable so that tests can force
// collisions; production code uses chained_block_hash.
using BlockHashFn = uint64_t (*)(uint64_t parent_hash, std::span<const int64_t> tokens);

// The "parent hash" of the first block of every sequence.
inline constexpr uint64_t kRootBlockHash = 0x6B76636163686521ull;

// The project's XXH64 over the tokens' bytes, seeded with the parent hash.
uint64_t chained_block_hash(uint64_t parent_hash, std::span<const int64_t> tokens);

}  // namespace fk::engine
