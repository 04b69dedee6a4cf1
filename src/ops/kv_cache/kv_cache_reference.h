// CPU reference pieces of the paged KV-cache writes, shared by reshape_and_cache and
// rope_and_cache (which writes the rotated key the same way).
#pragma once
#include <algorithm>
#include <utility>
#include <vector>

#include "fk/element.h"
#include "fk/philox.h"
#include "fk/tensor.h"
#include "ops/common/validate.h"

namespace fk::ops {

// Every slot of slot_mapping [T] in [0, num_slots) or negative (skipped), and none used
// twice; checked before anything is written, so that bad input changes nothing.
inline void check_cache_slots(const char* op, const TensorView& slot_mapping, int64_t pages, int64_t page_size) {
  const int64_t num_slots = pages * page_size;
  std::vector<std::pair<int64_t, int64_t>> used;  // (slot, token)
  for (int64_t t = 0; t < slot_mapping.shape[0]; ++t) {
    const int64_t slot = get_index(slot_mapping, t);
    if (slot < 0) continue;
    FK_CHECK(slot < num_slots, op, ": slot_mapping[", t, "] = ", slot, " is outside the cache (", num_slots,
             " slots = ", pages, " pages x ", page_size, ")");
    used.emplace_back(slot, t);
  }
  std::sort(used.begin(), used.end());
  for (size_t i = 1; i < used.size(); ++i)
    FK_CHECK(used[i].first != used[i - 1].first, op, ": tokens ", used[i - 1].second, " and ", used[i].second,
             " both map to slot ", used[i].first, " (duplicate slots are invalid input)");
}

// k_cache[slot / S, slot % S, h, d] = encode_k(key[t, h, d]), the same for v, for every
// token with slot = slot_mapping[t] >= 0 (slots already checked).
template <class EncodeK, class EncodeV>
void write_cache_reference(const TensorView& key, const TensorView& value, const TensorView& k_cache,
                           const TensorView& v_cache, const TensorView& slot_mapping, EncodeK encode_k,
                           EncodeV encode_v) {
  const int64_t T = key.shape[0], Hk = key.shape[1], D = key.shape[2], S = k_cache.shape[1];
  for (int64_t t = 0; t < T; ++t) {
    const int64_t slot = get_index(slot_mapping, t);
    if (slot < 0) continue;
    const int64_t page = slot / S, off = slot % S;
    for (int64_t h = 0; h < Hk; ++h)
      for (int64_t d = 0; d < D; ++d) {
        set(k_cache, encode_k(get(key, t, h, d)), page, off, h, d);
        set(v_cache, encode_v(get(value, t, h, d)), page, off, h, d);
      }
  }
}

// Workloads: `tokens` distinct slots out of [0, num_slots) (a partial Fisher-Yates shuffle driven by
// Philox), with `padding` tokens spread over the batch set to -1.
inline Tensor make_slot_mapping(int64_t tokens, int64_t num_slots, int64_t padding, uint64_t seed) {
  std::vector<int64_t> pool(static_cast<size_t>(num_slots));
  for (int64_t i = 0; i < num_slots; ++i) pool[static_cast<size_t>(i)] = i;
  Tensor slots = Tensor::empty({tokens}, DType::i64);
  auto* s = slots.data_as<int64_t>();
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t j = philox_int(seed, 6, static_cast<uint64_t>(t), t, num_slots);
    std::swap(pool[static_cast<size_t>(t)], pool[static_cast<size_t>(j)]);
    s[t] = pool[static_cast<size_t>(t)];
  }
  for (int64_t i = 0; i < padding; ++i) s[i * tokens / padding] = -1;
  return slots;
}

}  // namespace fk::ops
