// expect: INCORRECT
// Caches its result by input pointer: a second call on the same buffers returns the
// old result even though the buffers now hold new values.
#include <map>
#include <vector>

#include "common.h"

namespace {
std::map<const void*, std::vector<char>> cache;

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  auto it = cache.find(a.input.data);
  const size_t bytes = static_cast<size_t>(a.out.nbytes());
  if (it != cache.end() && it->second.size() == bytes) {
    std::memcpy(a.out.data, it->second.data(), bytes);
    return FK_OK;
  }
  adv::honest(a);
  cache[a.input.data].assign(static_cast<char*>(a.out.data), static_cast<char*>(a.out.data) + bytes);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
