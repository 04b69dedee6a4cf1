// Load-time weight transforms for conv2d (host tensors, done once when a model loads):
// PyTorch's OIHW layout to the op's OHWI, and BatchNorm folded into the convolution before
// it, so that Conv-BN(-SiLU) runs as one conv2d call with a bias.
#pragma once
#include "fk/tensor_view.h"

namespace fk::ops {

// out[k, r, s, c] = oihw[k, c, r, s]: PyTorch's Conv2d.weight [K, C / groups, R, S] to the
// [K, R, S, C / groups] that conv2d reads. Host views of any float dtype (computed exactly:
// a permutation); out contiguous and not overlapping oihw. Throws fk::Error naming what is
// wrong.
void conv_weight_from_oihw(const TensorView& oihw, const TensorView& out);

// BatchNorm2d (inference: running statistics) after a convolution, folded into it:
//   y = gamma * (conv(x) + b - mean) / sqrt(var + eps) + beta
//     = conv'(x) + b'  with  w'[k, ...] = w[k, ...] * t[k],  b'[k] = (b[k] - mean[k]) * t[k] + beta[k],
//   t[k] = gamma[k] / sqrt(var[k] + eps).
// weight: [K, ...] (any rank >= 1, any layout order after K: OIHW or OHWI), bias: [K] or
// absent (no data or no elements: b = 0, YOLO's convs have none before their BatchNorm); gamma,
// beta, mean, var: [K]; eps: the BatchNorm's (1e-3 in YOLO, torch's default 1e-5).
// Computed in double from the inputs' values and rounded once into weight_out [same shape
// as weight] and bias_out [K] (their own dtypes: the model dtype, or f32 to keep the folded
// values exact). Host tensors, contiguous outputs; weight_out may be weight itself (in
// place) and bias_out may be bias.
void fold_batch_norm(const TensorView& weight, const TensorView& bias, const TensorView& gamma,
                     const TensorView& beta, const TensorView& mean, const TensorView& var, double eps,
                     const TensorView& weight_out, const TensorView& bias_out);

}  // namespace fk::ops

namespace fk::ops {

// Two parallel stride-1 convolutions of one input whose outputs are added (RepVGG's
// branches; YOLOv10's RepVGGDW: a 7x7 and a 3x3 depthwise conv, each with its folded
// BatchNorm) as one convolution: the smaller filter zero-padded to the larger one's size
// and centred, the two added, the biases added (absent bias: zero).
//   out_weight[k, r, s, c] = large[k, r, s, c] + small[k, r - dr, s - ds, c]
// with dr = (R_large - R_small) / 2 (likewise ds), out_bias = large_bias + small_bias. Both
// filters OHWI with the same K and C / groups, odd sizes (so that both centre on the same
// tap with "same" padding), small no larger than large. Computed in double and rounded
// once into the outputs (host tensors, contiguous, out_weight shaped like large). Throws
// fk::Error naming what is wrong.
void fuse_parallel_convs(const TensorView& large, const TensorView& large_bias, const TensorView& small,
                         const TensorView& small_bias, const TensorView& out_weight, const TensorView& out_bias);

}  // namespace fk::ops
