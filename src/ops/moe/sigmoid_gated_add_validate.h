// Argument checks of sigmoid_gated_add, shared by its CPU reference and CUDA baseline.
// `backend` is where the implementation runs: every tensor must live there, and the CPU
// implementation, which is also the oracle, accepts f64 for `out` (the oracle's copy of
// an updated tensor). The row checks are the activation ops' (the kernel indexes rows
// and columns the same way).
#pragma once
#include "fk/ops/moe.h"
#include "ops/activation/activation_validate.h"
#include "ops/common/validate.h"

namespace fk::ops {

inline void validate_sigmoid_gated_add(const SigmoidGatedAddArgs& a, DeviceType backend) {
  constexpr const char* op = SigmoidGatedAddArgs::kName;
  expect_activation_input(op, a.input, backend);
  expect_activation_rows(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_activation_rows(op, "gate", a.gate, backend);
  FK_CHECK(a.gate.shape[0] == a.input.shape[0] && a.gate.shape[1] == 1, op, ": gate must be [", a.input.shape[0],
           ", 1] (one logit per token of input ", describe(a.input), "), got ", describe(a.gate));
  expect_dtype(op, "gate", a.gate, a.input.dtype);
  // Updated in place: a kernel reading input or gate after writing out must see the values
  // it was called with.
  expect_no_overlap(op, "out", a.out, "input", a.input);
  expect_no_overlap(op, "out", a.out, "gate", a.gate);
}

}  // namespace fk::ops
