// Device halves of fk/random.h (src/core/cuda/random.cu; CPU-only builds throw).
#pragma once
#include <cstdint>

#include "fk/tensor_view.h"

namespace fk::detail {
void fill_uniform_device(const TensorView& t, uint64_t seed, uint64_t offset, float lo, float hi, void* stream);
void fill_int_device(const TensorView& t, uint64_t seed, uint64_t offset, int64_t lo, int64_t hi, void* stream);
}  // namespace fk::detail
