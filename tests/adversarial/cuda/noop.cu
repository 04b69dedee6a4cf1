// expect: INCORRECT
// Launches nothing.
#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  (void)raw;
  (void)s;
  return FK_OK;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
