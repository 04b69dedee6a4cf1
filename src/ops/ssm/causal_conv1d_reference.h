// CPU references of causal_conv1d and causal_conv1d_update, accumulating in double. They
// read and write through fk::get / fk::set, so each is both the CPU backend (tensors of the
// model dtype) and the oracle (out and conv_state in f64), for any strides the ops accept.
// Both check the values the CUDA baselines cannot (cu_seqlens, slot indices).
#pragma once
#include "fk/ops/ssm_conv.h"

namespace fk::ops {

void causal_conv1d_reference(const CausalConv1dArgs& a);
void causal_conv1d_update_reference(const CausalConv1dUpdateArgs& a);

}  // namespace fk::ops
