// expect: INCORRECT
// Normalises only the first half of the rows.
#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const auto& a = adv::args(raw);
  return adv::launch(a, s, static_cast<int>(a.input.shape[0] / 2));
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
