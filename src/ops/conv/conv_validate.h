// Argument checks of the conv family (conv2d, max_pool2d, upsample_nearest2d,
// global_avg_pool, concat_channels), shared by the CPU reference and the CUDA baselines.
// `backend` is where the implementation runs: every tensor must live there, and the CPU
// implementation, which is also the oracle, accepts f64 for the output (the oracle's copy).
#pragma once
#include <climits>
#include <cstdint>
#include <string>
#include <utility>

#include "fk/ops/conv.h"
#include "ops/common/validate.h"

namespace fk::ops {

// Output extent of a window sweep (conv or pool), floor mode; <= 0 when the window does not
// fit the padded input.
inline int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dilation) {
  const int64_t span = dilation * (kernel - 1) + 1;
  const int64_t padded = in + 2 * pad;
  return padded < span ? 0 : (padded - span) / stride + 1;
}

// An [N, H, W, C] activation view: rank 4, on the backend, channels contiguous, strides
// non-negative, extents the kernels index with 32-bit pixel coordinates.
inline void expect_nhwc(const char* op, const char* arg, const TensorView& v, DeviceType backend) {
  expect_rank(op, arg, v, 4);
  expect_device(op, arg, v, backend);
  FK_CHECK(v.shape[3] == 1 || v.strides[3] == 1, op, ": ", arg,
           " must have contiguous channels (NHWC, channel stride 1), got ", describe(v));
  for (int d = 0; d < 4; ++d)
    FK_CHECK(v.shape[d] >= 0 && v.shape[d] <= INT_MAX && v.strides[d] >= 0, op, ": ", arg,
             " needs extents in [0, 2^31-1] and non-negative strides, got ", describe(v));
}

// An output activation view: additionally, no two of its elements share memory (each
// stride at least the extent of what lies inside it), so writes never collide.
inline void expect_nhwc_out(const char* op, const char* arg, const TensorView& v, DeviceType backend) {
  expect_nhwc(op, arg, v, backend);
  int64_t inner = v.shape[3];
  for (int d = 2; d >= 0; --d) {
    FK_CHECK(v.shape[d] <= 1 || v.strides[d] >= inner, op, ": ", arg, " dimension ", d, " stride ", v.strides[d],
             " is smaller than the ", inner, " elements inside it: its elements would overlap, got ", describe(v));
    inner = v.shape[d] <= 1 ? inner : v.strides[d] * (v.shape[d] - 1) + inner;
  }
}

// An output and another argument must not share memory, except two channel slices of one
// NHWC buffer (equal pixel/row/image strides and extents, disjoint channel ranges within
// one pixel): a C2f block writes one slice of its concatenation while reading another.
inline void expect_disjoint(const char* op, const char* arg, const TensorView& out, const char* other,
                            const TensorView& in) {
  if (out.data == nullptr || in.data == nullptr || out.numel() == 0 || in.numel() == 0) return;
  if (out.rank == 4 && in.rank == 4 && out.dtype == in.dtype) {
    bool same_grid = true;
    for (int d = 0; d < 3; ++d) same_grid = same_grid && out.shape[d] == in.shape[d] && out.strides[d] == in.strides[d];
    const int64_t es = out.element_size();
    const int64_t delta = static_cast<const char*>(in.data) - static_cast<const char*>(out.data);
    if (same_grid && delta % es == 0) {
      const int64_t e = delta / es;  // in's first channel, counted from out's
      // The smallest step between two of out's pixels (its channels live within it).
      int64_t pixel = INT64_MAX;
      for (int d = 0; d < 3; ++d)
        if (out.shape[d] > 1 && out.strides[d] < pixel) pixel = out.strides[d];
      if (e >= 0 ? e >= out.shape[3] && e + in.shape[3] <= pixel : -e >= in.shape[3] && -e + out.shape[3] <= pixel)
        return;
    }
  }
  expect_no_overlap(op, arg, out, other, in);
}

inline void expect_conv_dtype(const char* op, const char* arg, const TensorView& v) {
  expect_dtype_in(op, arg, v, {DType::f16, DType::bf16, DType::f32});
}

// out must be [N, P, Q, ch] of `input`'s dtype (or f64 for the oracle).
inline void expect_out_shape(const char* op, const TensorView& out, const TensorView& input, int64_t P, int64_t Q,
                             int64_t ch, DeviceType backend) {
  FK_CHECK(out.rank == 4 && out.shape[0] == input.shape[0] && out.shape[1] == P && out.shape[2] == Q &&
               out.shape[3] == ch,
           op, ": out must be [", input.shape[0], ", ", P, ", ", Q, ", ", ch, "] for input ", describe(input),
           ", got ", describe(out));
  expect_written_dtype(op, "out", out, input.dtype, backend);
}

inline void validate_conv2d(const Conv2dArgs& a, DeviceType backend) {
  constexpr const char* op = Conv2dArgs::kName;
  expect_nhwc(op, "input", a.input, backend);
  expect_conv_dtype(op, "input", a.input);
  FK_CHECK(a.stride_h >= 1 && a.stride_w >= 1, op, ": stride must be >= 1, got ", a.stride_h, "x", a.stride_w);
  FK_CHECK(a.dilation_h >= 1 && a.dilation_w >= 1, op, ": dilation must be >= 1, got ", a.dilation_h, "x",
           a.dilation_w);
  FK_CHECK(a.pad_h >= 0 && a.pad_w >= 0, op, ": padding must be >= 0, got ", a.pad_h, "x", a.pad_w);
  FK_CHECK(a.activation == ConvActivation::none || a.activation == ConvActivation::silu ||
               a.activation == ConvActivation::relu,
           op, ": activation must be none (0), silu (1) or relu (2), got ", static_cast<int>(a.activation));
  const int64_t C = a.input.shape[3];
  FK_CHECK(a.groups >= 1 && C % a.groups == 0, op, ": groups (", a.groups, ") must be >= 1 and divide the ", C,
           " input channels");
  expect_rank(op, "weight", a.weight, 4);
  expect_device(op, "weight", a.weight, backend);
  expect_dtype(op, "weight", a.weight, a.input.dtype);
  expect_contiguous(op, "weight", a.weight);
  const int64_t K = a.weight.shape[0], R = a.weight.shape[1], S = a.weight.shape[2];
  FK_CHECK(K >= 1 && R >= 1 && S >= 1 && a.weight.shape[3] == C / a.groups && K % a.groups == 0, op,
           ": weight must be [K, R, S, C / groups] = [K, R, S, ", C / a.groups, "] (OHWI) with K a multiple of groups ",
           a.groups, ", got ", describe(a.weight));
  FK_CHECK(K <= INT_MAX && R * S * (C / a.groups) <= INT_MAX, op, ": weight too large for 32-bit indexing, got ",
           describe(a.weight));
  const int64_t P = conv_out_size(a.input.shape[1], R, a.stride_h, a.pad_h, a.dilation_h);
  const int64_t Q = conv_out_size(a.input.shape[2], S, a.stride_w, a.pad_w, a.dilation_w);
  FK_CHECK(P >= 1 && Q >= 1, op, ": the ", R, "x", S, " filter (dilation ", a.dilation_h, "x", a.dilation_w,
           ") does not fit input ", describe(a.input), " padded by ", a.pad_h, "x", a.pad_w);
  expect_nhwc_out(op, "out", a.out, backend);
  expect_out_shape(op, a.out, a.input, P, Q, K, backend);
  if (arg_present(a.bias)) {
    expect_rank(op, "bias", a.bias, 1);
    expect_device(op, "bias", a.bias, backend);
    expect_dim(op, "bias", a.bias, 0, K);
    expect_dtype(op, "bias", a.bias, a.input.dtype);
    expect_contiguous(op, "bias", a.bias);
  }
  if (arg_present(a.residual)) {
    expect_nhwc(op, "residual", a.residual, backend);
    expect_dtype(op, "residual", a.residual, a.input.dtype);
    FK_CHECK(a.residual.shape[0] == a.out.shape[0] && a.residual.shape[1] == P && a.residual.shape[2] == Q &&
                 a.residual.shape[3] == K,
             op, ": residual must have out's shape [", a.out.shape[0], ", ", P, ", ", Q, ", ", K, "], got ",
             describe(a.residual));
    expect_disjoint(op, "out", a.out, "residual", a.residual);
  }
  expect_disjoint(op, "out", a.out, "input", a.input);
  expect_no_overlap(op, "out", a.out, "weight", a.weight);
  if (arg_present(a.bias)) expect_no_overlap(op, "out", a.out, "bias", a.bias);
}

inline void validate_max_pool2d(const MaxPool2dArgs& a, DeviceType backend) {
  constexpr const char* op = MaxPool2dArgs::kName;
  expect_nhwc(op, "input", a.input, backend);
  expect_conv_dtype(op, "input", a.input);
  FK_CHECK(a.kernel_h >= 1 && a.kernel_w >= 1, op, ": kernel must be >= 1, got ", a.kernel_h, "x", a.kernel_w);
  FK_CHECK(a.stride_h >= 1 && a.stride_w >= 1, op, ": stride must be >= 1, got ", a.stride_h, "x", a.stride_w);
  FK_CHECK(a.pad_h >= 0 && a.pad_w >= 0 && 2 * a.pad_h <= a.kernel_h && 2 * a.pad_w <= a.kernel_w, op,
           ": padding must be in [0, kernel / 2] (every window holds a tap), got ", a.pad_h, "x", a.pad_w,
           " for a ", a.kernel_h, "x", a.kernel_w, " kernel");
  const int64_t P = conv_out_size(a.input.shape[1], a.kernel_h, a.stride_h, a.pad_h, 1);
  const int64_t Q = conv_out_size(a.input.shape[2], a.kernel_w, a.stride_w, a.pad_w, 1);
  FK_CHECK(P >= 1 && Q >= 1, op, ": the ", a.kernel_h, "x", a.kernel_w, " window does not fit input ",
           describe(a.input), " padded by ", a.pad_h, "x", a.pad_w);
  expect_nhwc_out(op, "out", a.out, backend);
  expect_out_shape(op, a.out, a.input, P, Q, a.input.shape[3], backend);
  expect_disjoint(op, "out", a.out, "input", a.input);
}

inline void validate_upsample_nearest2d(const UpsampleNearest2dArgs& a, DeviceType backend) {
  constexpr const char* op = UpsampleNearest2dArgs::kName;
  expect_nhwc(op, "input", a.input, backend);
  expect_conv_dtype(op, "input", a.input);
  FK_CHECK(a.scale_h >= 1 && a.scale_w >= 1, op, ": scale must be >= 1, got ", a.scale_h, "x", a.scale_w);
  const int64_t P = a.input.shape[1] * a.scale_h, Q = a.input.shape[2] * a.scale_w;
  FK_CHECK(P <= INT_MAX && Q <= INT_MAX, op, ": the upsampled size ", P, "x", Q, " exceeds 2^31-1");
  expect_nhwc_out(op, "out", a.out, backend);
  expect_out_shape(op, a.out, a.input, P, Q, a.input.shape[3], backend);
  expect_disjoint(op, "out", a.out, "input", a.input);
}

inline void validate_global_avg_pool(const GlobalAvgPoolArgs& a, DeviceType backend) {
  constexpr const char* op = GlobalAvgPoolArgs::kName;
  expect_nhwc(op, "input", a.input, backend);
  expect_conv_dtype(op, "input", a.input);
  FK_CHECK(a.input.shape[1] >= 1 && a.input.shape[2] >= 1, op, ": input needs at least one pixel, got ",
           describe(a.input));
  expect_rank(op, "out", a.out, 2);
  expect_device(op, "out", a.out, backend);
  FK_CHECK(a.out.shape[0] == a.input.shape[0] && a.out.shape[1] == a.input.shape[3], op, ": out must be [",
           a.input.shape[0], ", ", a.input.shape[3], "] for input ", describe(a.input), ", got ", describe(a.out));
  FK_CHECK(a.out.shape[1] <= 1 || a.out.strides[1] == 1, op, ": out must have contiguous channels, got ",
           describe(a.out));
  FK_CHECK(a.out.shape[0] <= 1 || a.out.strides[0] >= a.out.shape[1], op, ": out's rows must not overlap, got ",
           describe(a.out));
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_no_overlap(op, "out", a.out, "input", a.input);
}

inline void validate_concat_channels(const ConcatChannelsArgs& a, DeviceType backend) {
  constexpr const char* op = ConcatChannelsArgs::kName;
  FK_CHECK(a.num_inputs >= 1 && a.num_inputs <= ConcatChannelsArgs::kMaxInputs, op, ": num_inputs must be in [1, ",
           ConcatChannelsArgs::kMaxInputs, "], got ", a.num_inputs);
  const TensorView& first = a.inputs[0];
  int64_t channels = 0;
  for (int i = 0; i < a.num_inputs; ++i) {
    const TensorView& in = a.inputs[i];
    const std::string name = "inputs[" + std::to_string(i) + "]";
    FK_CHECK(in.data != nullptr || in.numel() == 0, op, ": ", name, " has no data");
    expect_nhwc(op, name.c_str(), in, backend);
    expect_conv_dtype(op, name.c_str(), in);
    expect_dtype(op, name.c_str(), in, first.dtype);
    FK_CHECK(in.shape[0] == first.shape[0] && in.shape[1] == first.shape[1] && in.shape[2] == first.shape[2], op,
             ": ", name, " must have the images and pixels of inputs[0] ", describe(first), ", got ", describe(in));
    channels += in.shape[3];
  }
  FK_CHECK(channels <= INT_MAX, op, ": ", channels, " channels in all exceed 2^31-1");
  expect_nhwc_out(op, "out", a.out, backend);
  expect_out_shape(op, a.out, first, first.shape[1], first.shape[2], channels, backend);
  for (int i = 0; i < a.num_inputs; ++i)
    expect_disjoint(op, "out", a.out, ("inputs[" + std::to_string(i) + "]").c_str(), a.inputs[i]);
}

inline void validate_grn(const GrnArgs& a, DeviceType backend) {
  constexpr const char* op = GrnArgs::kName;
  expect_nhwc(op, "input", a.input, backend);
  expect_conv_dtype(op, "input", a.input);
  FK_CHECK(a.input.shape[1] >= 1 && a.input.shape[2] >= 1 && a.input.shape[3] >= 1, op,
           ": input needs at least one pixel and one channel, got ", describe(a.input));
  expect_nhwc_out(op, "out", a.out, backend);
  expect_same_shape(op, "out", a.out, "input", a.input);
  expect_written_dtype(op, "out", a.out, a.input.dtype, backend);
  expect_no_overlap(op, "out", a.out, "input", a.input);
  const int64_t N = a.input.shape[0], C = a.input.shape[3];
  for (const auto& [name, v] : {std::pair{"gamma", a.gamma}, std::pair{"beta", a.beta}}) {
    expect_rank(op, name, v, 1);
    expect_device(op, name, v, backend);
    expect_dim(op, name, v, 0, C);
    expect_dtype(op, name, v, a.input.dtype);
    expect_contiguous(op, name, v);
  }
  expect_rank(op, "scale", a.scale, 2);
  expect_device(op, "scale", a.scale, backend);
  FK_CHECK(a.scale.shape[0] == N && a.scale.shape[1] == C, op, ": scale must be [", N, ", ", C, "], got ",
           describe(a.scale));
  expect_written_dtype(op, "scale", a.scale, DType::f32, backend);
  expect_contiguous(op, "scale", a.scale);
  expect_no_overlap(op, "scale", a.scale, "input", a.input);
  expect_no_overlap(op, "scale", a.scale, "out", a.out);
}

}  // namespace fk::ops
