// Test and benchmark inputs: Philox streams written into tensors. For a given (seed,
// offset) the host and device versions write bit-identical tensors.
#pragma once
#include <cstdint>

#include "fk/tensor_view.h"

namespace fk {

// Element i = fmaf(hi - lo, uniform(seed, offset, i), lo), rounded to t's dtype. Integer
// dtypes get floor of that value. t must be contiguous.
void fill_uniform(const TensorView& t, uint64_t seed, uint64_t offset, float lo, float hi,
                  void* stream = nullptr);
// Element i = philox_int(seed, offset, i, lo, hi), stored in t's dtype (integer or float).
void fill_int(const TensorView& t, uint64_t seed, uint64_t offset, int64_t lo, int64_t hi,
              void* stream = nullptr);

}  // namespace fk
