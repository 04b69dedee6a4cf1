// expect: INCORRECT
// Writes zeros: a plausible-looking output that a loose check might pass.
#include "common.h"

namespace {
fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  for (int64_t t = 0; t < a.input.shape[0]; ++t)
    for (int64_t h = 0; h < a.input.shape[1]; ++h) adv::store(a.out, t, h, 0.f);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
