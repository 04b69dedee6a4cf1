// expect: INCORRECT
// Keeps 7 mantissa bits of 1/rms: inside the element tolerance, but materially
// less accurate than the baseline.
#include "common.h"

namespace {
fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  for (int64_t t = 0; t < a.input.shape[0]; ++t) {
    float inv = adv::inv_rms(a, t, a.input.shape[1]);
    uint32_t u;
    std::memcpy(&u, &inv, 4);
    u &= 0xffff0000u;
    std::memcpy(&inv, &u, 4);
    for (int64_t h = 0; h < a.input.shape[1]; ++h) adv::store(a.out, t, h, adv::load(a.input, t, h) * inv * adv::weight(a, h));
  }
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
