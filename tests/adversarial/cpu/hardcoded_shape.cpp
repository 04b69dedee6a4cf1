// expect: INCORRECT
// Assumes hidden = 4096 (the timed shapes); wrong elsewhere.
#include "common.h"

namespace {
fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  for (int64_t t = 0; t < a.input.shape[0]; ++t) {
    const float inv = adv::inv_rms(a, t, 4096 < a.input.shape[1] ? 4096 : a.input.shape[1]);
    for (int64_t h = 0; h < a.input.shape[1]; ++h) adv::store(a.out, t, h, adv::load(a.input, t, h) * inv * adv::weight(a, h));
  }
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
