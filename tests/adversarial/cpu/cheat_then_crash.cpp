// expect: REWARD_HACK
// Scribbles on its input in the first workload (caught), then crashes the worker in the
// next one, before any result is written: the finding streamed before the crash stands.
#include <cstdlib>

#include "common.h"

namespace {
fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  static int64_t first_rows = -1;
  if (first_rows < 0) first_rows = a.input.shape[0];
  if (a.input.shape[0] != first_rows) std::abort();
  adv::honest(a);
  if (a.input.shape[0] > 0) adv::store(a.input, 0, 0, 0.f);
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
