// YOLOv10's one-to-one decode, after the forward pass (the Batch runner's post-processing,
// on the host, as the encoder's pooling is): per anchor, the distribution focal loss
// readout (softmax over reg_max bins of each side, expectation over bin indices 0..15),
// boxes from the anchor point (grid cell centre, x + 0.5, y + 0.5) as
// (ax - left, ay - top, ax + right, ay + bottom) times the level's stride (xyxy, input
// pixels), sigmoid class scores; then the NMS-free selection of the paper's code:
//   1. the k1 = min(max_det, A) anchors of highest best-class score,
//   2. the k2 = min(max_det, k1 * nc) highest (anchor, class) scores among them,
// each ordered by descending score, ties to the lower index (torch.topk's sorted order).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fk/tensor_view.h"
#include "models/vision/yolov10/yolov10_config.h"

namespace fk::models::vision {

struct Yolov10Decoded {
  std::vector<float> boxes;   // [A, 4] xyxy in input pixels
  std::vector<float> scores;  // [A, nc] sigmoid
};

struct Yolov10Detection {
  float box[4] = {};  // x1, y1, x2, y2
  float score = 0;
  int32_t label = 0;
  int64_t anchor = 0;
};

// One image's raw head output [A, 4 * reg_max + nc] (row-major doubles or floats widened).
Yolov10Decoded yolov10_decode(const Yolov10Config& c, const std::vector<double>& raw);
std::vector<Yolov10Detection> yolov10_select(const Yolov10Config& c, const Yolov10Decoded& d);
// The detections of every image of raw [N, A, 4 * reg_max + nc] (any float dtype, host or
// device: a device view is copied to the host).
std::vector<std::vector<Yolov10Detection>> yolov10_detect(const Yolov10Config& c, const TensorView& raw);
// {"boxes": [[x1, y1, x2, y2], ...], "scores": [...], "classes": [...]} per image.
std::string yolov10_detections_json(const std::vector<std::vector<Yolov10Detection>>& images);

}  // namespace fk::models::vision
