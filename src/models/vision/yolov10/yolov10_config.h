// The config of a YOLOv10 detector (the paper's n / s / m scales as their model yaml files
// define them) and the layer table it expands to.
//
// Config JSON (model_type "yolov10"):
//   {"model_type": "yolov10", "scale": "n", "nc": 80, "imgsz": 640}
// with optional "depth_multiple", "width_multiple", "max_channels" overriding the scale's
// (a tiny config: the n graph at a smaller width), "bn_eps" (1e-3: the detector's training
// code sets every BatchNorm's eps to it; it is not in the state dict), "reg_max" (16) and
// "max_det" (300). Scales b, l and x and other heads are refused by name.
//
// Channels follow the yaml rule: c = ceil(min(c_yaml, max_channels) * width / 8) * 8, and a
// block repeated n > 1 times in the yaml is repeated max(round(n * depth), 1) times.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fk::models::vision {

enum class Yolov10Block : uint8_t { conv, c2f, c2f_cib, scdown, sppf, psa, upsample, concat, detect };
std::string_view yolov10_block_name(Yolov10Block kind);

// One resolved row of the model yaml: "model.<index>" in the state dict.
struct Yolov10Layer {
  int index = 0;
  Yolov10Block kind = Yolov10Block::conv;
  std::vector<int> from;  // earlier layer indices (-1 resolved to index - 1)
  int64_t c_in = 0;       // channels in (concat: the sum; detect: unused)
  int64_t c_out = 0;      // channels out (detect: unused)
  int64_t repeats = 1;    // C2f / C2fCIB bottlenecks
  int kernel = 1, stride = 1;
  bool shortcut = false;  // C2f / C2fCIB residual bottlenecks
  bool large_kernel = false;  // C2fCIB: RepVGGDW (7x7 + 3x3 depthwise) in each CIB
  int64_t stride_px = 1;  // the output's total stride in input pixels
};

struct Yolov10Config {
  std::string model_type = "yolov10";
  std::string scale = "n";
  double depth_multiple = 0.33, width_multiple = 0.25;
  int64_t max_channels = 1024;
  int64_t nc = 80;
  int64_t imgsz = 640;
  int64_t reg_max = 16;
  int64_t max_det = 300;
  double bn_eps = 1e-3;
  std::vector<Yolov10Layer> layers;  // model.0 .. model.23 (the last is v10Detect)

  const Yolov10Layer& detect() const { return layers.back(); }
  // v10Detect's input channels per level (P3, P4, P5) and its branch widths.
  std::vector<int64_t> detect_channels() const;
  int64_t box_channels() const { return std::max<int64_t>({16, detect_channels()[0] / 4, 4 * reg_max}); }
  int64_t cls_channels() const { return std::max<int64_t>(detect_channels()[0], std::min<int64_t>(nc, 100)); }
  // Channels of the raw head output per anchor: 4 * reg_max box logits, then nc class logits.
  int64_t outputs_per_anchor() const { return 4 * reg_max + nc; }
  // Anchors of an imgsz x imgsz image: the P3, P4 and P5 grids together.
  int64_t anchors() const;
};

// Parses config text; `source` names it in errors. Throws fk::Error naming the field or
// the unsupported setting.
Yolov10Config parse_yolov10_config(std::string_view config_json, std::string_view source);

}  // namespace fk::models::vision
