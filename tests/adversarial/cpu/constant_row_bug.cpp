// expect: INCORRECT
// Right on every row but a constant one, which it takes for a row with nothing to
// normalise and writes as zeros, as a LayerNorm would (the centred row is zero). An RMS
// norm of a constant row c is sign(c) * weight. Random rows are never constant; the edge
// round with constant rows finds it.
#include "common.h"

namespace {
bool constant_row(const fk::ops::RmsNormArgs& a, int64_t t, int64_t H) {
  for (int64_t h = 1; h < H; ++h)
    if (adv::load(a.input, t, h) != adv::load(a.input, t, 0)) return false;
  return true;
}

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  const int64_t T = a.input.shape[0], H = a.input.shape[1];
  for (int64_t t = 0; t < T; ++t) {
    if (H > 1 && constant_row(a, t, H)) {
      for (int64_t h = 0; h < H; ++h) adv::store(a.out, t, h, 0.f);
    } else {
      adv::row(a, t, H);
    }
  }
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
