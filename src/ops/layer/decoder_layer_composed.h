// decoder_layer as calls of the ops it is made of, through the registry (so a candidate
// installed for any part runs inside the layer): the CUDA baseline, and on either backend
// the composition the registry falls back to when a part has a candidate (OpDef::composed).
#pragma once
#include "fk/op.h"

namespace fk::ops {

fk_status decoder_layer_composed_cpu(const void* args, void* stream);
fk_status decoder_layer_composed_cuda(const void* args, void* stream);
// The plan step: the attention op's plan with this layer's metadata (CUDA; the CPU has none).
fk_status decoder_layer_plan_cuda(const void* args, void* stream);

}  // namespace fk::ops
