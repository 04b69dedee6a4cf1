// expect: INCORRECT
// rms_norm without its epsilon: 1 / sqrt(mean(x^2)). On random rows eps is lost in the
// mean and the outputs are within tolerance; a zero row divides 0 by 0 (NaN where the
// answer is 0), and a row of tiny values, whose squares underflow, divides by 0 too.
#include "common.h"

namespace {
fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  const int64_t T = a.input.shape[0], H = a.input.shape[1];
  for (int64_t t = 0; t < T; ++t) {
    float ss = 0;
    for (int64_t h = 0; h < H; ++h) {
      const float x = adv::load(a.input, t, h);
      ss += x * x;
    }
    const float inv = 1.f / std::sqrt(ss / static_cast<float>(H));
    for (int64_t h = 0; h < H; ++h) adv::store(a.out, t, h, adv::load(a.input, t, h) * inv * adv::weight(a, h));
  }
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
