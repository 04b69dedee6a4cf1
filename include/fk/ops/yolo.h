// YOLOv10 blocks as layer-level (L3) ops: the model's main block behind one interface, so a
// candidate can replace it whole (one fused kernel for the block) while the baseline calls
// its convolutions through the registry.
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

// C2f (YOLOv8/v10's cross-stage-partial block with two convolutions), NHWC, every Conv a
// conv2d with its BatchNorm folded (bias) and SiLU, "same" padding, stride 1:
//   y0 | y1 = cv1(input)                         1x1, C1 -> 2c channels (y0 the first c)
//   y_{j+2} = [y_{j+1} +] m_j.cv2(m_j.cv1(y_{j+1}))   3x3, 3x3 (c -> c), the residual when shortcut
//   out = cv2(y0 | y1 | ... | y_{n+1})           1x1, (2 + n) c -> C2
// with n = num_bottlenecks. Shapes: N images of H x W; c = cv1's K / 2.
// Dtypes: f16, bf16 or f32, every tensor the input's. Math as conv2d's (each convolution
// rounds its output once); the oracle keeps every intermediate in double.
struct Yolov10C2fArgs {
  static constexpr const char* kName = "yolov10_c2f";
  static constexpr int kMaxBottlenecks = 4;  // YOLOv10-M's deepest C2f
  TensorView out;         // [N, H, W, C2] written; channels contiguous
  TensorView input;       // [N, H, W, C1] read; channels contiguous
  TensorView cv1_weight;  // [2c, 1, 1, C1] read; contiguous
  TensorView cv1_bias;    // [2c] read
  TensorView cv2_weight;  // [C2, 1, 1, (2 + n) c] read
  TensorView cv2_bias;    // [C2] read
  // Bottleneck j: m_weight[2j] (cv1) and m_weight[2j + 1] (cv2), each [c, 3, 3, c], with
  // their biases [c]; slots past 2n are ignored (left empty).
  TensorView m_weight[2 * kMaxBottlenecks];
  TensorView m_bias[2 * kMaxBottlenecks];
  TensorView concat;  // [N, H, W, (2 + n) c] workspace: the concatenation (contiguous)
  TensorView mid;     // [N, H, W, c] workspace: a bottleneck's middle (contiguous)
  int32_t num_bottlenecks = 1;  // 1..kMaxBottlenecks
  int32_t shortcut = 0;         // 1: bottlenecks add their input
};

}  // namespace fk::ops
