// expect: INCORRECT
// Does nothing: the poisoned output stays.
#include "common.h"

namespace {
fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::RmsNormArgs*>(raw);
  (void)a;
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
