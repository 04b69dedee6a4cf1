// decoder_layer's CPU reference (the oracle): see decoder_layer_reference.cpp.
#pragma once
#include "fk/ops/layer.h"

namespace fk::ops {

// Validates, checks positions and slots before writing anything, then runs the layer.
void decoder_layer_reference(const DecoderLayerArgs& a);

}  // namespace fk::ops
