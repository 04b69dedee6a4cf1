// expect: PASSED, with exact token agreement and a small end-to-end speedup
// The baseline's fused_add_rms_norm arithmetic with the weight prefetched into L2 before
// the programmatic-launch wait (../prefetch_norm.cuh).
#include "../prefetch_norm.cuh"

namespace {
fk_status run(const void* raw, void* stream) { return cand::run(raw, stream, /*skip_residual_from=*/0); }
}  // namespace

FK_EXPORT_CANDIDATE(fused_add_rms_norm, run)
