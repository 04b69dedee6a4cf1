// expect: INCORRECT
// Returns the previous call's result and computes this call's result "later" (on the
// next call): batched work across calls.
#include <vector>

#include "common.h"

namespace {
std::vector<char> pending;

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  const size_t bytes = static_cast<size_t>(a.out.nbytes());
  std::vector<char> previous = pending;
  adv::honest(a);
  pending.assign(static_cast<char*>(a.out.data), static_cast<char*>(a.out.data) + bytes);
  if (previous.size() == bytes) std::memcpy(a.out.data, previous.data(), bytes);
  else std::memset(a.out.data, 0, bytes);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
