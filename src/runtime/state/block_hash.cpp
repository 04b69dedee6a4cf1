#include "runtime/state/block_hash.h"

#include "core/safetensors/safetensors.h"

namespace fk::engine {

uint64_t chained_block_hash(uint64_t parent_hash, std::span<const int64_t> tokens) {
  return safetensors::content_hash64(tokens.data(), tokens.size_bytes(), parent_hash);
}

}  // namespace fk::engine
