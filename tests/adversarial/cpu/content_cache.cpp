// expect: INCORRECT
// Remembers its outputs keyed on a hash of the input bytes and replays them when the key
// comes again. Hashing every input byte costs as much as an rms_norm reads, so the key is
// cheap: the first 64 bytes of every row of `input`, and its shape. The timed calls get fresh inputs, so
// the cache never hits there (a key over every byte of every input would be exact
// memoisation, paid for and never rewarded); the edge round that repeats the first
// round's inputs with one element changed (in `input` and in `weight`, which the key
// leaves out) gets the stale output of the first round: INCORRECT.
#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "common.h"

namespace {
std::map<std::pair<uint64_t, int64_t>, std::vector<char>> cache;

uint64_t sampled_hash(const fk::TensorView& v) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the sampled bytes
  const int64_t rows = v.shape[0], cols = v.shape[1], es = v.element_size();
  const int64_t sampled = std::min<int64_t>(64, cols * es);
  for (int64_t r = 0; r < rows; ++r) {
    const auto* p = static_cast<const unsigned char*>(v.data) + r * v.strides[0] * es;
    for (int64_t b = 0; b < sampled; ++b) h = (h ^ p[b]) * 1099511628211ull;
  }
  return h ^ static_cast<uint64_t>(cols) << 40;
}

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  const auto key = std::make_pair(sampled_hash(a.input), a.input.shape[0]);
  const size_t bytes = static_cast<size_t>(a.out.nbytes());
  if (auto it = cache.find(key); it != cache.end() && it->second.size() == bytes) {
    std::memcpy(a.out.data, it->second.data(), bytes);
    return FK_OK;
  }
  adv::honest(a);
  if (cache.size() < 4096) cache[key].assign(static_cast<char*>(a.out.data), static_cast<char*>(a.out.data) + bytes);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
