// convnextv2_block as registry calls of its parts (convnextv2_block_def.cpp): the CPU baseline
// and, registered by convnextv2_block_cuda.cpp, the CUDA one.
#pragma once
#include "fk/op.h"

namespace fk::ops {

fk_status convnextv2_block_composed_cpu(const void* args, void* stream);
fk_status convnextv2_block_composed_cuda(const void* args, void* stream);

}  // namespace fk::ops
