// Device halves of fk/random.h (src/core/cuda/random.cu; CPU-only builds throw). The
// arguments are already validated by the host entry points in random.cpp.
#pragma once
#include <cstdint>

#include "core/random_element.h"
#include "fk/tensor_view.h"

namespace fk::detail {
void fill_uniform_device(const TensorView& t, uint64_t seed, uint64_t offset, UniformParams p, void* stream);
void fill_int_device(const TensorView& t, uint64_t seed, uint64_t offset, int64_t lo, int64_t hi, void* stream);
void fill_normal_device(const TensorView& t, uint64_t seed, uint64_t offset, NormalParams p, void* stream);
}  // namespace fk::detail
