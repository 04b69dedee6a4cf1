// expect: TIMEOUT
// Never returns.
#include "common.h"

namespace {
fk_status run(const void*, void*) {
  for (volatile int i = 0;; i = i + 1) {
  }
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
