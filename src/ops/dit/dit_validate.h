// Argument checks of the DiT ops (fk/ops/dit.h), shared by their CPU references and CUDA
// baselines. `backend` is where the implementation runs: every tensor must live there, and
// the CPU implementation, which is also the oracle, accepts f64 for what it writes.
#pragma once
#include <cmath>

#include "fk/ops/dit.h"
#include "ops/activation/activation_validate.h"
#include "ops/common/validate.h"

namespace fk::ops {

// A per-sample [B, H] vector of a [T, H] input: B >= 1 divides T, the input's dtype.
inline void expect_per_sample(const char* op, const char* arg, const TensorView& v, const TensorView& input,
                              DeviceType backend) {
  expect_activation_rows(op, arg, v, backend);
  expect_dtype(op, arg, v, input.dtype);
  FK_CHECK(v.shape[1] == input.shape[1], op, ": ", arg, " must have the ", input.shape[1],
           " columns of input ", describe(input), ", got ", describe(v));
  FK_CHECK(v.shape[0] >= 1 && input.shape[0] % v.shape[0] == 0, op, ": ", arg, " [B, H] needs B >= 1 dividing the ",
           input.shape[0], " tokens of input (B samples of T / B tokens), got ", describe(v));
}

inline void validate_silu(const SiluArgs& a, DeviceType backend) { validate_elementwise(a, backend); }

inline void validate_adaln_modulate(const AdaLnModulateArgs& a, DeviceType backend) {
  constexpr const char* op = AdaLnModulateArgs::kName;
  expect_activation_input(op, a.input, backend);
  expect_activation_rows(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_per_sample(op, "shift", a.shift, a.input, backend);
  expect_per_sample(op, "scale", a.scale, a.input, backend);
  FK_CHECK(a.shift.shape[0] == a.scale.shape[0], op, ": shift ", describe(a.shift), " and scale ",
           describe(a.scale), " must have the same samples");
  FK_CHECK(a.eps > 0 && std::isfinite(a.eps), op, ": eps must be positive and finite, got ", a.eps);
  expect_no_overlap(op, "out", a.out, "input", a.input);
  expect_no_overlap(op, "out", a.out, "shift", a.shift);
  expect_no_overlap(op, "out", a.out, "scale", a.scale);
}

inline void validate_gated_residual_add(const GatedResidualAddArgs& a, DeviceType backend) {
  constexpr const char* op = GatedResidualAddArgs::kName;
  expect_activation_input(op, a.input, backend);
  expect_activation_rows(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_per_sample(op, "gate", a.gate, a.input, backend);
  // Updated in place: a kernel reading input or gate after writing out must see the values
  // it was called with.
  expect_no_overlap(op, "out", a.out, "input", a.input);
  expect_no_overlap(op, "out", a.out, "gate", a.gate);
}

inline void validate_flow_match_euler_step(const FlowMatchEulerStepArgs& a, DeviceType backend) {
  constexpr const char* op = FlowMatchEulerStepArgs::kName;
  expect_activation_rows(op, "model_output", a.model_output, backend);
  expect_dtype_in(op, "model_output", a.model_output, {DType::f32, DType::f16, DType::bf16});
  expect_activation_rows(op, "sample", a.sample, backend);
  expect_same_shape(op, "sample", a.sample, "model_output", a.model_output);
  expect_written_dtype(op, "sample", a.sample, a.model_output.dtype, backend);
  FK_CHECK(std::isfinite(a.dt), op, ": dt must be finite, got ", a.dt);
  expect_no_overlap(op, "sample", a.sample, "model_output", a.model_output);
}

inline void validate_ddim_step(const DdimStepArgs& a, DeviceType backend) {
  constexpr const char* op = DdimStepArgs::kName;
  expect_activation_rows(op, "model_output", a.model_output, backend);
  expect_dtype_in(op, "model_output", a.model_output, {DType::f32, DType::f16, DType::bf16});
  expect_activation_rows(op, "sample", a.sample, backend);
  expect_same_shape(op, "sample", a.sample, "model_output", a.model_output);
  expect_written_dtype(op, "sample", a.sample, a.model_output.dtype, backend);
  FK_CHECK(std::isfinite(a.c_sample) && std::isfinite(a.c_output), op, ": c_sample and c_output must be finite, got ",
           a.c_sample, " and ", a.c_output);
  expect_no_overlap(op, "sample", a.sample, "model_output", a.model_output);
}

// input [B, X, Y, C] -> out [B, Y, X, C]. The input's strides are free but non-negative (the
// overlap check measures a view's span from its first element); out is contiguous.
inline void validate_transpose_tokens(const TransposeTokensArgs& a, DeviceType backend) {
  constexpr const char* op = TransposeTokensArgs::kName;
  const TensorView &in = a.input, &out = a.out;
  expect_rank(op, "input", in, 4);
  expect_device(op, "input", in, backend);
  expect_dtype_in(op, "input", in, {DType::f32, DType::f16, DType::bf16});
  FK_CHECK(in.strides[3] == 1 || in.shape[3] <= 1, op, ": input [B, X, Y, C] must have a contiguous channel dimension",
           " (stride 1), got ", describe(in), " with strides ", shape_to_string(in.strides, in.rank));
  FK_CHECK(in.strides[0] >= 0 && in.strides[1] >= 0 && in.strides[2] >= 0, op,
           ": input strides must be non-negative, got ", shape_to_string(in.strides, in.rank), " for ", describe(in));
  expect_rank(op, "out", out, 4);
  expect_device(op, "out", out, backend);
  FK_CHECK(out.shape[0] == in.shape[0] && out.shape[1] == in.shape[2] && out.shape[2] == in.shape[1] &&
               out.shape[3] == in.shape[3],
           op, ": out must be [B, Y, X, C] = [", in.shape[0], ", ", in.shape[2], ", ", in.shape[1], ", ", in.shape[3],
           "] for input [B, X, Y, C] ", describe(in), ", got ", describe(out));
  expect_written_dtype(op, "out", out, in.dtype, backend);
  FK_CHECK(out.is_contiguous(), op, ": out must be contiguous, got ", describe(out), " with strides ",
           shape_to_string(out.strides, out.rank));
  expect_no_overlap(op, "out", out, "input", in);
}

}  // namespace fk::ops
