// oasis_block as registry calls of its parts (oasis_block_def.cpp): the CPU baseline and,
// registered by oasis_block_cuda.cpp, the CUDA one.
#pragma once
#include "fk/op.h"

namespace fk::ops {

fk_status oasis_block_composed_cpu(const void* args, void* stream);
fk_status oasis_block_composed_cuda(const void* args, void* stream);

}  // namespace fk::ops
