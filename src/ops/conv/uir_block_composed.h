// uir_block as registry calls of its conv2d parts (uir_block_def.cpp): the CPU baseline and,
// registered by uir_block_cuda.cpp, the CUDA one.
#pragma once
#include "fk/op.h"

namespace fk::ops {

fk_status uir_block_composed_cpu(const void* args, void* stream);
fk_status uir_block_composed_cuda(const void* args, void* stream);

}  // namespace fk::ops
