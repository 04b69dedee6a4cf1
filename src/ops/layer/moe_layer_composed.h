// moe_layer as registry calls of its parts (moe_layer_composed.cpp): its baseline on both
// backends, and its plan (the attention op's plan with the layer's metadata).
#pragma once
#include "fk/op.h"

namespace fk::ops {

fk_status moe_layer_composed_cpu(const void* args, void* stream);
fk_status moe_layer_composed_cuda(const void* args, void* stream);
fk_status moe_layer_plan_cuda(const void* args, void* stream);

}  // namespace fk::ops
