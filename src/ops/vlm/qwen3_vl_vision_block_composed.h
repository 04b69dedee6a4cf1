// qwen3_vl_vision_block as registry calls of its parts (qwen3_vl_vision_block_def.cpp): the
// CPU baseline and, registered by qwen3_vl_vision_block_cuda.cpp, the CUDA one.
#pragma once
#include "fk/op.h"

namespace fk::ops {

fk_status qwen3_vl_vision_block_composed_cpu(const void* args, void* stream);
fk_status qwen3_vl_vision_block_composed_cuda(const void* args, void* stream);

}  // namespace fk::ops
