// Argument checks of add, shared by its CPU reference and CUDA baseline. The row checks are
// the activation ops' (the kernel indexes rows and columns the same way).
#pragma once
#include "fk/ops/elementwise.h"
#include "ops/activation/activation_validate.h"
#include "ops/common/validate.h"

namespace fk::ops {

inline void validate_add(const AddArgs& a, DeviceType backend) {
  constexpr const char* op = AddArgs::kName;
  expect_activation_input(op, a.a, backend);
  expect_activation_rows(op, "b", a.b, backend);
  expect_same_shape(op, "b", a.b, "a", a.a);
  expect_dtype(op, "b", a.b, a.a.dtype);
  expect_activation_rows(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "a", a.a);
  expect_written_dtype(op, "out", a.out, a.a.dtype, backend);
  expect_no_overlap(op, "out", a.out, "b", a.b);
  // In place on a, or apart from it: a partial overlap would read elements already written.
  if (a.out.data != a.a.data || a.out.strides[0] != a.a.strides[0]) expect_no_overlap(op, "out", a.out, "a", a.a);
}

}  // namespace fk::ops
