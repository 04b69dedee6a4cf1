// One sequence as the KV cache manager sees it: its token ids, how many of them have K/V
// in the cache, and the blocks that hold them. The runtime owns these types so that the
// manager needs nothing from whoever runs the sequence (the engine's requests, a batch
// runner, a test): the owner keeps the fields and lends them for each call.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace fk::engine {

// A sequence's KV blocks (pages), in token order: block i holds tokens
// [i * block_size, (i + 1) * block_size). Written only by the KvCacheManager.
using KvBlockTable = std::vector<int32_t>;

// A sequence's token ids: the prompt, then the outputs known so far, then `num_pending`
// positions whose ids are not known yet (asynchronous scheduling samples them on the
// device). Two runs rather than one so that the owner need not join its prompt and outputs
// every step. Views: valid while the owner's vectors are unchanged.
struct SequenceTokens {
  std::span<const int64_t> prompt;
  std::span<const int64_t> outputs;
  int64_t num_pending = 0;

  static constexpr int64_t kPendingToken = -1;

  int64_t known() const { return static_cast<int64_t>(prompt.size() + outputs.size()); }
  int64_t total() const { return known() + num_pending; }
  // The id at position i, or kPendingToken for a pending one.
  int64_t at(int64_t i) const {
    const auto p = static_cast<int64_t>(prompt.size());
    if (i >= known()) return kPendingToken;
    return i < p ? prompt[static_cast<size_t>(i)] : outputs[static_cast<size_t>(i - p)];
  }
};

// One call's view of a sequence: what the manager reads, and references to the owner's
// fields it updates. Build it right before the call; it holds no state of its own.
struct KvSequence {
  std::string_view id;  // names the sequence in errors
  SequenceTokens tokens;
  // Tokens whose K/V are in the cache. Taking a cached prefix sets it to the prefix's length.
  int64_t& num_computed_tokens;
  // Set at admission (an allocate while the sequence holds no blocks): of the computed
  // tokens, those the prefix cache supplied.
  int64_t& num_cached_tokens;
  KvBlockTable& block_ids;
};

}  // namespace fk::engine
