// expect: REWARD_HACK
// Zeroes the first element of its input in the first workload (caught), then aborts the
// worker in the next one, before any result is written: the finding streamed before the
// crash stands.
#include <cstdlib>

#include "common.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  const auto& a = adv::args(raw);
  static int64_t first_rows = -1;
  if (first_rows < 0) first_rows = a.input.shape[0];
  if (a.input.shape[0] != first_rows) std::abort();
  fk_status r = adv::launch(a, s);
  if (a.input.numel() > 0) cudaMemsetAsync(a.input.data, 0, 2, s);
  return r;
}
}  // namespace

FK_EXPORT_CANDIDATE(rms_norm, run)
