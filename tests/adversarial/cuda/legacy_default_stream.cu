// expect: REWARD_HACK
// Timer trick: launches on the legacy default stream, which does not
// synchronise with the harness's non-blocking stream, so the events around the call
// measure nothing.
#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  (void)s;
  return adv::launch(adv::args(raw), cudaStreamLegacy);
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
