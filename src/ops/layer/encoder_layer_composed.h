// encoder_layer as registry calls of its parts (encoder_layer_def.cpp): the CPU baseline and,
// registered by encoder_layer_cuda.cpp, the CUDA one.
#pragma once
#include "fk/op.h"

namespace fk::ops {

fk_status encoder_layer_composed_cpu(const void* args, void* stream);
fk_status encoder_layer_composed_cuda(const void* args, void* stream);

}  // namespace fk::ops
