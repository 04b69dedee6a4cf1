// Detection-head ops (YOLOv10's one-to-one head after its convolutions).
#pragma once
#include <cstdint>

#include "fk/op.h"

namespace fk::ops {

// YOLOv8/v10's box and score decode (the distribution focal loss readout): per image n and
// anchor a, with R = reg_max bins per box side and r = raw[n, a, :],
//   d_s = sum_{i < R} i * softmax(r[s*R .. s*R + R))_i        for the sides s = left, top, right, bottom
//   boxes[n, a]  = ((ax - d_0) * st, (ay - d_1) * st, (ax + d_2) * st, (ay + d_3) * st)   xyxy, input pixels
//   scores[n, a, k] = sigmoid(r[4R + k])
// where (ax, ay, st) = anchors[a]: the anchor point in grid units (a cell centre, x + 0.5,
// y + 0.5) and its level's stride. Math in f32 (CUDA) or double (CPU reference), rounded
// once to the outputs. The top-k that follows is the caller's.
struct DflBoxDecodeArgs {
  static constexpr const char* kName = "dfl_box_decode";
  TensorView boxes;    // [N, A, 4] written; f32; contiguous
  TensorView scores;   // [N, A, nc] written; f32; contiguous
  TensorView raw;      // [N, A, 4 * reg_max + nc] read; f16/bf16/f32; last dim contiguous, other strides free
  TensorView anchors;  // [A, 3] read; f32; contiguous: anchor x, anchor y (grid units), stride (pixels)
  int32_t reg_max = 16;  // >= 1
};

}  // namespace fk::ops
