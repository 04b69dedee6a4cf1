// expect: PASSED, exact token agreement, no speedup
// The control for honest_faster/: the same kernel and launch without the weight prefetch.
// Whatever speedup it shows end to end is measurement noise or run-order bias (the
// baseline always runs first), to be subtracted from the honest candidate's.
#include "../prefetch_norm.cuh"

namespace {
fk_status run(const void* raw, void* stream) {
  return cand::run(raw, stream, /*skip_residual_from=*/0, /*prefetch=*/false);
}
}  // namespace

FK_EXPORT_CANDIDATE(fused_add_rms_norm, run)
