// YOLOv10's one-to-one decode. The model's forward ends with the dfl_box_decode op
// (fk/ops/detect.h: per anchor the distribution focal loss readout, xyxy boxes in input
// pixels from the anchor point, sigmoid class scores); what follows runs on the host (the
// Batch runner's post-processing, as the encoder's pooling is): the NMS-free selection of
// the paper's code:
//   1. the k1 = min(max_det, A) anchors of highest best-class score,
//   2. the k2 = min(max_det, k1 * nc) highest (anchor, class) scores among them,
// each ordered by descending score, ties to the lower index (torch.topk's sorted order).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fk/tensor.h"
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

// The anchors of the config's grids: [A, 3] f32 host (x + 0.5, y + 0.5, stride), P3, P4,
// P5 row-major: dfl_box_decode's anchors.
Tensor yolov10_anchors(const Yolov10Config& c);
// One image's raw head output [A, 4 * reg_max + nc] decoded on the host by dfl_box_decode's
// CPU implementation (the golden test decodes the reference's raw output this way).
Yolov10Decoded yolov10_decode(const Yolov10Config& c, const std::vector<double>& raw);
std::vector<Yolov10Detection> yolov10_select(const Yolov10Config& c, const Yolov10Decoded& d);
// The detections of every image from the model's decoded outputs, boxes [N, A, 4] and
// scores [N, A, nc] (f32, host or device: device views are copied to the host).
std::vector<std::vector<Yolov10Detection>> yolov10_detect(const Yolov10Config& c, const TensorView& boxes,
                                                          const TensorView& scores);
// {"boxes": [[x1, y1, x2, y2], ...], "scores": [...], "classes": [...]} per image.
std::string yolov10_detections_json(const std::vector<std::vector<Yolov10Detection>>& images);

}  // namespace fk::models::vision
