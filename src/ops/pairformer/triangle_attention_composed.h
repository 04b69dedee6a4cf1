// triangle_attention as registry calls of its parts (triangle_attention_def.cpp): the CPU
// baseline and, registered by triangle_attention_cuda.cpp, the CUDA one.
#pragma once
#include "fk/op.h"

namespace fk::ops {

fk_status triangle_attention_composed_cpu(const void* args, void* stream);
fk_status triangle_attention_composed_cuda(const void* args, void* stream);

}  // namespace fk::ops
