// The rope workload fields (rope_workload.h) of a captured call's tensors: what the rope ops'
// workload_from_call share.
#pragma once
#include "fk/op_registry.h"
#include "fk/ops/rope.h"

namespace fk::ops {

// query [T, Hq*D] or [T, Hq, D]; key [T, Hk*D] or [T, Hk, D]; cos_sin_cache [max_pos, rot_dim].
Json rope_call_workload(const TensorView& positions, const TensorView& query, const TensorView& key,
                        const TensorView& cos_sin_cache, int64_t head_size, RopeStyle style);

}  // namespace fk::ops
