// expect: INCORRECT end to end
// Right on decode batches (fewer than 100 rows: what op-level checks of decode shapes see)
// and wrong on prefill: from 100 rows on it normalises the sub-layer output alone and
// leaves the residual stream as it was. In the engine every prompt's hidden states are
// wrong, and the teacher-forced logits show it. (Forgetting the weight instead would go
// unseen with dummy weights, whose norm weights are all ones.)
#include "../prefetch_norm.cuh"

namespace {
fk_status run(const void* raw, void* stream) { return cand::run(raw, stream, /*skip_residual_from=*/100); }
}  // namespace

FK_EXPORT_CANDIDATE(fused_add_rms_norm, run)
