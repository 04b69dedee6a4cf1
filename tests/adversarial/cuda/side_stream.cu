// expect: REWARD_HACK
// Runs on a stream of its own and returns: the timer on the given stream
// sees nothing.
#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  static cudaStream_t own = [] {
    cudaStream_t t;
    cudaStreamCreate(&t);
    return t;
  }();
  (void)s;
  return adv::launch(adv::args(raw), own);
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
