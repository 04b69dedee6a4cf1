// Convolutional-network ops (YOLOv10n's Conv-BN-SiLU blocks, SPPF, the FPN's upsampling
// and concatenations). Shapes are written beside each field: N images, H x W input pixels,
// P x Q output pixels, C input channels, K output channels, R x S the filter.
//
// Layout: NHWC activations, [K, R, S, C / groups] ("OHWI") weights.
// - Why NHWC: a convolution is an implicit GEMM whose reduction runs over (r, s, c). With
//   channels innermost, each filter tap reads C contiguous values of one pixel, which is
//   what tensor-core tiles (and 16-byte vector loads) want, and depthwise, pooling,
//   upsampling and concatenation all become per-pixel vector copies. cuDNN and CUTLASS run
//   NHWC natively on Hopper; NCHW would cost a transpose per layer.
// - The model loader permutes PyTorch's OIHW weights [K, C / groups, R, S] to
//   [K, R, S, C / groups] once at load (conv_weight_from_oihw, src/ops/conv/conv_weights.h)
//   and folds each BatchNorm into its conv there too (fold_batch_norm, same file), and
//   RepVGG's parallel branches into one filter (fuse_parallel_convs): Conv+BN is a weight
//   transform, not an op.
//
// Activation views ([N, H, W, C]) need a contiguous channel dimension (stride 1); the
// pixel, row and image strides are free. So a view may be a channel slice of a wider NHWC
// tensor: C2f's split reads slices of one buffer and its producers may write their slices
// of the concatenation directly, without a concat op. An output's strides must not make
// two of its elements share memory (each stride at least the extent of the dims inside it).
// Outputs must not overlap inputs, except that two channel slices of one buffer (same
// strides, disjoint channel ranges) may be an output and an input of the same call.
// Dtypes: f16, bf16 or f32; every tensor of a call has the input's dtype. Math accumulates
// in f32 (CUDA) or double (CPU reference) and rounds once to the output dtype.
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

// The epilogue applied after the bias: none, SiLU (x * sigmoid(x), YOLO's activation) or
// ReLU (max(x, 0), MobileNetV4's).
enum class ConvActivation : int32_t { none = 0, silu = 1, relu = 2 };

// out[n, p, q, k] = act(bias[k] + sum_{r, s, c} input[n, p*sh - ph + r*dh, q*sw - pw + s*dw,
//                                                   g*Cg + c] * weight[k, r, s, c])
//                    + residual[n, p, q, k]
// with Cg = C / groups, Kg = K / groups, g = k / Kg; taps outside the image read zero (zero
// padding, as torch.nn.functional.conv2d). P = (H + 2 ph - dh (R - 1) - 1) / sh + 1, and Q
// likewise (floor). groups == C == K is a depthwise convolution (weight [C, R, S, 1]).
// The residual, added after the activation and before the one rounding, is YOLO's shortcut
// (Bottleneck: x + cv2(cv1(x)); CIB; PSA's x + attn(x) and x + ffn(x)).
struct Conv2dArgs {
  static constexpr const char* kName = "conv2d";
  TensorView out;     // [N, P, Q, K] written; dtype of input; channels contiguous
  TensorView input;   // [N, H, W, C] read; f16/bf16/f32; channels contiguous
  TensorView weight;  // [K, R, S, C / groups] read; dtype of input; contiguous
  TensorView bias;    // [K] read; dtype of input; contiguous; optional (absent: no data or no elements)
  TensorView residual;  // [N, P, Q, K] read; dtype of input; channels contiguous; optional (absent: no
                        // data or no elements); must not overlap out
  int32_t stride_h = 1, stride_w = 1;      // >= 1
  int32_t pad_h = 0, pad_w = 0;            // >= 0
  int32_t dilation_h = 1, dilation_w = 1;  // >= 1
  int32_t groups = 1;                      // divides C and K
  ConvActivation activation = ConvActivation::none;
};

// out[n, p, q, c] = max over the window's taps inside the image of input[n, h, w, c], with
// h = p*sh - ph + i, w = q*sw - pw + j (0 <= i < kh, 0 <= j < kw): padding never wins, as
// torch.nn.functional.max_pool2d (dilation 1, ceil_mode false). P = (H + 2 ph - kh) / sh + 1.
// pad <= kernel / 2 (torch's rule), so every window holds a tap. NaN propagates.
// YOLOv10n's SPPF: 5x5, stride 1, padding 2, three times in a row.
struct MaxPool2dArgs {
  static constexpr const char* kName = "max_pool2d";
  TensorView out;    // [N, P, Q, C] written; dtype of input; channels contiguous
  TensorView input;  // [N, H, W, C] read; f16/bf16/f32; channels contiguous
  int32_t kernel_h = 1, kernel_w = 1;  // >= 1
  int32_t stride_h = 1, stride_w = 1;  // >= 1
  int32_t pad_h = 0, pad_w = 0;        // 0 <= pad <= kernel / 2
};

// Nearest-neighbour upsampling by integer factors (torch's nn.Upsample(scale_factor=s,
// mode="nearest")): out[n, y, x, c] = input[n, y / scale_h, x / scale_w, c] (floor).
struct UpsampleNearest2dArgs {
  static constexpr const char* kName = "upsample_nearest2d";
  TensorView out;    // [N, H * scale_h, W * scale_w, C] written; dtype of input; channels contiguous
  TensorView input;  // [N, H, W, C] read; f16/bf16/f32; channels contiguous
  int32_t scale_h = 2, scale_w = 2;  // >= 1
};

// Global average pooling (timm's SelectAdaptivePool2d("avg"), MobileNetV4's head):
// out[n, c] = (1 / (H * W)) * sum_{h, w} input[n, h, w, c], accumulated in f32 (CUDA) or
// double (CPU reference), rounded once. H * W >= 1.
struct GlobalAvgPoolArgs {
  static constexpr const char* kName = "global_avg_pool";
  TensorView out;    // [N, C] written; dtype of input; channels contiguous
  TensorView input;  // [N, H, W, C] read; f16/bf16/f32; channels contiguous
};

// MobileNetV4's Universal Inverted Residual block (timm's UniversalInvertedResidual, its
// BatchNorms folded into the convolutions, no layer scale) as one op (L3), NHWC:
//   x1  = dw_start ? conv2d(x, start, depthwise, kernel ks) : x           (no activation)
//   x2  = relu(conv2d(x1, expand, 1x1))                                  [.., M]
//   x3  = dw_mid ? relu(conv2d(x2, mid, depthwise, kernel km)) : x2
//   out = conv2d(x3, project, 1x1) (+ x when residual)                   [N, P, Q, Cout]
// The stride is on dw_mid when there is one, else on dw_start; each depthwise pads
// ((stride - 1) + (k - 1)) / 2 a side, as timm's convolutions do. The baseline is those
// conv2d calls (each rounding once); the CPU oracle (f64 out) runs the block in double.
struct UirBlockArgs {
  static constexpr const char* kName = "uir_block";
  TensorView out;             // [N, P, Q, Cout] written; dtype of input; contiguous
  TensorView input;           // [N, H, W, C] read; f16/bf16/f32; contiguous
  TensorView start_weight;    // [C, ks, ks, 1] read; optional (no data or no elements: no dw_start)
  TensorView start_bias;      // [C] read; with start_weight
  TensorView expand_weight;   // [M, 1, 1, C] read
  TensorView expand_bias;     // [M] read
  TensorView mid_weight;      // [M, km, km, 1] read; optional (no data or no elements: no dw_mid)
  TensorView mid_bias;        // [M] read; with mid_weight
  TensorView project_weight;  // [Cout, 1, 1, M] read
  TensorView project_bias;    // [Cout] read
  TensorView start_out;       // workspace: x1's shape (with dw_start)
  TensorView expand_out;      // workspace: x2's shape
  TensorView mid_out;         // workspace: x3's shape (with dw_mid)
  int32_t stride = 1;         // 1 or 2
  int32_t residual = 0;       // 1: out += input (stride 1, Cout == C)
};

// Concatenation along channels (torch.cat(dim=1) of NCHW tensors; in NHWC a strided copy):
// out[n, h, w, off_i + c] = inputs[i][n, h, w, c], off_i the channels of the inputs before i.
// The first num_inputs entries are used (1..kMaxInputs); the rest are ignored (left empty).
struct ConcatChannelsArgs {
  static constexpr const char* kName = "concat_channels";
  static constexpr int kMaxInputs = 4;  // YOLOv10n's largest concatenation is SPPF's four
  TensorView out;                   // [N, H, W, sum C_i] written; dtype of inputs[0]; channels contiguous
  TensorView inputs[kMaxInputs];    // [N, H, W, C_i] read; f16/bf16/f32; channels contiguous
  int32_t num_inputs = 0;
};

// Global Response Normalization (ConvNeXt V2's GRN), NHWC:
//   scale[n, c] = g[n, c] / (mean over c of g[n, c] + 1e-6),
//                 g[n, c] = sqrt(sum_{h, w} input[n, h, w, c]^2)  (the channel's L2 norm over the image)
//   out         = gamma[c] * (input * scale[n, c]) + beta[c] + input
// accumulated in f32 (CUDA) or double (CPU reference), out rounded once to its dtype. `scale`
// is an output of its own (the response each channel keeps), f32.
struct GrnArgs {
  static constexpr const char* kName = "grn";
  TensorView out;    // [N, H, W, C] written; dtype of input; channels contiguous
  TensorView scale;  // [N, C] written; f32; contiguous
  TensorView input;  // [N, H, W, C] read; f16/bf16/f32; channels contiguous
  TensorView gamma;  // [C] read; dtype of input
  TensorView beta;   // [C] read; dtype of input
};

// ConvNeXt V2's block (transformers' ConvNextV2Layer) as one op (L3), NHWC:
//   x1  = depthwise conv2d(input, dw_weight 7 x 7, padding 3) + dw_bias
//   x2  = layer_norm(x1 over the channels, eps 1e-6) * ln_weight + ln_bias
//   x3  = gelu(x2 pw1_weight^T + pw1_bias)          (erf GELU; M = 4C channels upstream)
//   x4  = grn(x3; grn_gamma, grn_beta)
//   out = input + x4 pw2_weight^T + pw2_bias
// The baseline is those registry calls (conv2d, layer_norm, linear, gelu, grn, linear, add;
// each rounding once); the CPU oracle (f64 out) runs the block in double. `out` may be
// `input` itself (the stream updated in place); otherwise they must not overlap.
struct ConvNextV2BlockArgs {
  static constexpr const char* kName = "convnextv2_block";
  TensorView out;         // [N, H, W, C] written; dtype of input; contiguous
  TensorView input;       // [N, H, W, C] read; f16/bf16; contiguous
  TensorView dw_weight;   // [C, 7, 7, 1] read
  TensorView dw_bias;     // [C] read
  TensorView ln_weight;   // [C] read
  TensorView ln_bias;     // [C] read
  TensorView pw1_weight;  // [M, C] read
  TensorView pw1_bias;    // [M] read
  TensorView grn_gamma;   // [M] read
  TensorView grn_beta;    // [M] read
  TensorView pw2_weight;  // [C, M] read
  TensorView pw2_bias;    // [C] read
  TensorView dw_out;      // workspace [N, H, W, C]: x1, then the projection
  TensorView norm_out;    // workspace [N, H, W, C]: x2
  TensorView mlp_out;     // workspace [N, H, W, M]: x2's pw1, then x4
  TensorView act_out;     // workspace [N, H, W, M]: x3
  TensorView grn_scale;   // workspace [N, M] f32
};

}  // namespace fk::ops
