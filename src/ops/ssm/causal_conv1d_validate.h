// Argument checks of causal_conv1d and causal_conv1d_update, shared by their CPU
// reference and CUDA baselines. `backend` is where the implementation runs: every tensor
// must live there, and the CPU implementation, which is also the oracle, accepts f64 for
// the tensors it writes (out, conv_state). Values inside device tensors (cu_seqlens, slot
// indices) are checked by the CPU reference only (fk/ops/ssm_conv.h, "Valid input").
#pragma once
#include <climits>

#include "fk/ops/ssm_conv.h"
#include "ops/common/validate.h"
#include "ops/ssm/conv_state.h"
#include "ops/ssm/varlen_validate.h"

namespace fk::ops {

inline constexpr int64_t kConvMinWidth = 2, kConvMaxWidth = 4;

// weight [D, W] (2 <= W <= 4) and the optional bias [D]: contiguous, of the model dtype.
inline void expect_conv_weight_and_bias(const char* op, const TensorView& weight, const TensorView& bias, int64_t D,
                                        DType model, DeviceType backend) {
  expect_rank(op, "weight", weight, 2);
  expect_device(op, "weight", weight, backend);
  FK_CHECK(weight.shape[0] == D, op, ": weight must be [", D, ", width] (one filter per channel of x), got ",
           describe(weight));
  FK_CHECK(weight.shape[1] >= kConvMinWidth && weight.shape[1] <= kConvMaxWidth, op,
           ": weight width (taps per filter) must be 2, 3 or 4, got ", describe(weight));
  expect_dtype(op, "weight", weight, model);
  expect_contiguous(op, "weight", weight);
  if (!arg_present(bias)) return;
  expect_rank(op, "bias", bias, 1);
  expect_device(op, "bias", bias, backend);
  expect_dim(op, "bias", bias, 0, D);
  expect_dtype(op, "bias", bias, model);
  expect_contiguous(op, "bias", bias);
}

inline void expect_silu_flag(const char* op, int32_t silu) {
  FK_CHECK(silu == 0 || silu == 1, op, ": silu must be 0 (no activation) or 1 (SiLU), got ", silu);
}

// The updated state must not share bytes with anything else the call reads or writes.
template <class A>
void expect_conv_no_overlaps(const A& a) {
  const char* op = A::kName;
  expect_no_overlap(op, "out", a.out, "x", a.x);
  expect_no_overlap(op, "out", a.out, "conv_state", a.conv_state);
  expect_no_overlap(op, "out", a.out, "weight", a.weight);
  expect_no_overlap(op, "conv_state", a.conv_state, "x", a.x);
  expect_no_overlap(op, "conv_state", a.conv_state, "weight", a.weight);
  if (arg_present(a.bias)) {
    expect_no_overlap(op, "out", a.out, "bias", a.bias);
    expect_no_overlap(op, "conv_state", a.conv_state, "bias", a.bias);
  }
}

inline void validate_causal_conv1d(const CausalConv1dArgs& a, DeviceType backend) {
  constexpr const char* op = CausalConv1dArgs::kName;
  expect_rank(op, "x", a.x, 2);
  expect_device(op, "x", a.x, backend);
  expect_dtype_in(op, "x", a.x, {DType::f32, DType::f16, DType::bf16});
  expect_rows_contiguous(op, "x", a.x);
  const int64_t T = a.x.shape[0], D = a.x.shape[1];
  FK_CHECK(D > 0 && D <= INT_MAX && T <= INT_MAX, op, ": x must be [tokens, channels] with tokens <= 2^31-1 and ",
           "1 <= channels <= 2^31-1, got ", describe(a.x));
  FK_CHECK(T <= 1 || a.x.strides[0] >= D, op, ": x rows must not overlap (row stride ", a.x.strides[0],
           " < channels ", D, ")");
  expect_rank(op, "out", a.out, 2);
  expect_device(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "x", a.x);
  expect_written_dtype(op, "out", a.out, a.x.dtype, backend);
  expect_rows_contiguous(op, "out", a.out);
  FK_CHECK(T <= 1 || a.out.strides[0] >= D, op, ": out rows must not overlap (row stride ", a.out.strides[0],
           " < channels ", D, ")");
  expect_conv_weight_and_bias(op, a.weight, a.bias, D, a.x.dtype, backend);
  expect_conv_state(op, a.conv_state, D, a.weight.shape[1], a.x.dtype, backend);
  expect_cu_seqlens(op, "cu_seqlens", a.cu_seqlens, backend);
  const int64_t B = a.cu_seqlens.shape[0] - 1;
  expect_per_sequence(op, "state_indices", a.state_indices, B, DType::i32, backend);
  if (arg_present(a.has_initial_state))
    expect_per_sequence(op, "has_initial_state", a.has_initial_state, B, DType::boolean, backend);
  expect_silu_flag(op, a.silu);
  expect_conv_no_overlaps(a);
}

inline void validate_causal_conv1d_update(const CausalConv1dUpdateArgs& a, DeviceType backend) {
  constexpr const char* op = CausalConv1dUpdateArgs::kName;
  FK_CHECK(a.x.rank == 2 || a.x.rank == 3, op, ": x must be [batch, channels] or [batch, tokens, channels], got ",
           describe(a.x));
  expect_device(op, "x", a.x, backend);
  expect_dtype_in(op, "x", a.x, {DType::f32, DType::f16, DType::bf16});
  expect_rows_contiguous(op, "x", a.x);
  const int64_t B = a.x.shape[0], N = a.x.rank == 3 ? a.x.shape[1] : 1, D = a.x.shape[a.x.rank - 1];
  FK_CHECK(D > 0 && D <= INT_MAX && B <= INT_MAX && N <= INT_MAX, op,
           ": x sizes must be at most 2^31-1 and channels >= 1, got ", describe(a.x));
  expect_device(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "x", a.x);
  expect_written_dtype(op, "out", a.out, a.x.dtype, backend);
  expect_rows_contiguous(op, "out", a.out);
  expect_conv_weight_and_bias(op, a.weight, a.bias, D, a.x.dtype, backend);
  expect_conv_state(op, a.conv_state, D, a.weight.shape[1], a.x.dtype, backend);
  expect_per_sequence(op, "state_indices", a.state_indices, B, DType::i32, backend);
  expect_silu_flag(op, a.silu);
  expect_conv_no_overlaps(a);
}

}  // namespace fk::ops
