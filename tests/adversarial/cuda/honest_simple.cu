// expect: PASSED
// Honest: a plain one-block-per-row kernel on the given stream.
#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  return adv::launch(adv::args(raw), s);
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
