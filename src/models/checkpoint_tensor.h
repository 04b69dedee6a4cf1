// Reading one weight of a model from a safetensors checkpoint: the checks every model's
// loader makes (present, of the shape its config implies, a float dtype) with named errors,
// and the conversion of its values into the model's host tensor.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "core/safetensors/safetensors.h"
#include "fk/tensor.h"

namespace fk::models {

// The tensor `name` of `ckpt`, refused by name when it is missing (the error says it is
// needed by `needed_by`, e.g. "a FLUX transformer of this config"), has another shape than
// `shape`, or is not F32, BF16 or F16.
TensorView checked_float_tensor(const safetensors::Checkpoint& ckpt, const std::string& name, const Shape& shape,
                                std::string_view needed_by);

// Copies `src` (any float dtype) into rows [row, row + src.shape[0]) of the host tensor
// `dst` (dst's dtype, one rounding per element).
void convert_rows(const TensorView& src, Tensor& dst, int64_t row = 0);

// A host f32 tensor converted to `dtype` (one rounding per element) on `device`.
Tensor f32_to_model(const Tensor& f32, DType dtype, Device device);

// What a weight source (a function of a state-dict name and its shape: a checkpoint's tensor,
// or a random one) gave for `name`, checked to be a host f32 tensor of `shape`; `model`
// names the model in the error.
void expect_source_tensor(const Tensor& t, const std::string& name, const Shape& shape, std::string_view model);

// checked_float_tensor's values as a new f32 host tensor of `shape`.
Tensor read_f32_tensor(const safetensors::Checkpoint& ckpt, const std::string& name, const Shape& shape,
                       std::string_view needed_by);

}  // namespace fk::models
