// dlrm_top as registry calls of its parts (dlrm_top_def.cpp): the CPU baseline and,
// registered by dlrm_top_cuda.cpp, the CUDA one.
#pragma once
#include "fk/op.h"

namespace fk::ops {

fk_status dlrm_top_composed_cpu(const void* args, void* stream);
fk_status dlrm_top_composed_cuda(const void* args, void* stream);

}  // namespace fk::ops
