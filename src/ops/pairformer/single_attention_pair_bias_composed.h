// single_attention_pair_bias as registry calls of its parts (single_attention_pair_bias_def.cpp):
// the CPU baseline and, registered by single_attention_pair_bias_cuda.cpp, the CUDA one.
#pragma once
#include "fk/op.h"

namespace fk::ops {

fk_status single_attention_pair_bias_composed_cpu(const void* args, void* stream);
fk_status single_attention_pair_bias_composed_cuda(const void* args, void* stream);

}  // namespace fk::ops
