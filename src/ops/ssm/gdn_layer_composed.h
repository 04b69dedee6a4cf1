// gdn_layer as registry calls of its parts (gdn_layer_def.cpp): the CPU baseline and,
// registered by gdn_layer_cuda.cpp, the CUDA one.
#pragma once
#include "fk/op.h"

namespace fk::ops {

fk_status gdn_layer_composed_cpu(const void* args, void* stream);
fk_status gdn_layer_composed_cuda(const void* args, void* stream);

}  // namespace fk::ops
