// expect: INCORRECT
// Written for the timed shapes (hidden <= 1024): a row is one 1024-wide tile. A wider row
// is cut into tiles and each tile is normalised by its own rms, with the cross-tile sum
// forgotten. Every tile of a 5120-wide check row is then off by its tile's rms against the
// row's (about 2% per tile on random input), so no seed can hide it. (An earlier version
// summed the first 4096 of 5120 columns: off by ~0.5%, which one seed in ~100 let pass.)
#include "common.h"

namespace {
constexpr int64_t kTile = 1024;

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  const int64_t hidden = a.input.shape[1];
  for (int64_t t = 0; t < a.input.shape[0]; ++t) {
    for (int64_t begin = 0; begin < hidden; begin += kTile) {
      const int64_t end = hidden - begin < kTile ? hidden : begin + kTile;
      const float inv = adv::inv_rms(a, t, begin, end);
      for (int64_t h = begin; h < end; ++h)
        adv::store(a.out, t, h, adv::load(a.input, t, h) * inv * adv::weight(a, h));
    }
  }
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
