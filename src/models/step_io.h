// What the models' plan and forward share in reading a step: a named input of the step, and
// the upload of a host-side preparation (positions, tables, projections) to its buffer.
#pragma once
#include <cstddef>
#include <string_view>

#include "fk/tensor.h"
#include "models/model.h"

namespace fk::models {

// The step's tensor `name`; an empty view where it is absent and not `required`, else a
// named error ("<model>: step input '<name>' is missing").
TensorView step_input(const StepInputs& in, const char* name, bool required, std::string_view model);

// `bytes` from host memory into `dst` on `stream`, ordered after the kernels of the step
// before, which may still read the buffer (a pageable source is staged by the driver before
// the call returns, so `src` may go out of scope then).
void upload_to(const Tensor& dst, const void* src, size_t bytes, void* stream, std::string_view model);

}  // namespace fk::models
