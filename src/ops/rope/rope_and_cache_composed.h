// rope_and_cache as its parts through the registry (what OpRegistry::call runs when the rope
// or the cache write has a candidate, or the op's "unfused" variant is selected).
#pragma once
#include "fk/op.h"
#include "fk/tensor_view.h"

namespace fk::ops {

template <DeviceType Backend>
fk_status rope_and_cache_composed(const void* args, void* stream);

}  // namespace fk::ops
