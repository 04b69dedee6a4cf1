// expect: REWARD_HACK
// Correct output, then zeroes the first element of its input.
#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const auto& a = adv::args(raw);
  fk_status r = adv::launch(a, s);
  if (a.input.numel() > 0) cudaMemsetAsync(a.input.data, 0, 2, s);
  return r;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
