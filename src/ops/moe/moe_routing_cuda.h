// The CUDA routing launch (moe_topk_softmax, moe_topk_sigmoid, moe_grouped_topk), shared
// by the routing ops and by fused_moe's general path. One kernel launch with PDL; no
// allocation, copy or synchronisation (capturable).
#pragma once
#include "fk/ops/moe.h"

namespace fk::ops::moe_cuda {

// Largest expert count the CUDA routing handles (a lane keeps E / 32 scores in registers).
inline constexpr int kRoutingMaxExperts = 1024;

// Writes weights / ids [T, k] from gating [T, E] for validated arguments on `stream` (a
// cudaStream_t); no-op for zero tokens. Without grouping, n_group = topk_group = 1 and no
// bias; scale multiplies every weight (routed_scaling_factor, else 1). FK_ERR_UNSUPPORTED
// (naming `op`) for E > kRoutingMaxExperts or more than 32 groups.
void launch_routing(const TensorView& weights, const TensorView& ids, const TensorView& gating, const char* op,
                    MoeScoring scoring, const TensorView& bias, int n_group, int topk_group, int renormalize,
                    float scale, void* stream);

}  // namespace fk::ops::moe_cuda
