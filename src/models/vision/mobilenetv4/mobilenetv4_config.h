// The config of a MobileNetV4 image classifier (timm's mobilenetv4_conv_small and
// mobilenetv4_conv_medium) and the layer table it expands to.
//
// Config JSON (model_type "mobilenetv4"):
//   {"model_type": "mobilenetv4", "variant": "conv_small", "num_classes": 1000, "image_size": 224}
// or timm's hub config.json as it is: {"architecture": "mobilenetv4_conv_small", "num_classes",
// "num_features", "pretrained_cfg": {"input_size": [3, 224, 224], ...}, ...}
// with optional "crop_pct" (the eval transform's centre crop: timm's pretrained_cfg's, 0.875
// for conv_small, 0.95 for conv_medium), "channel_multiplier" (1.0: timm's round_channels on every block's output
// channels; below 1 the 32-channel stem stays fixed, as timm's fix_stem), "num_features"
// (1280: conv_head's width, never scaled) and "bn_eps" (1e-5, torch's BatchNorm2d default:
// not in the state dict). The other variants (conv_large, hybrid_*, the anti-aliased ones) are
// refused by name: they need blocks (mobile attention, blur pooling) the engine does not build.
//
// The block table mirrors timm's arch defs ("cn" ConvBnAct; "er" EdgeResidual, the FusedIB:
// a full KxK expansion conv, then a 1x1 projection; "uir" Universal Inverted Residual with
// optional start and middle depthwise convs); every conv pads kernel / 2 on each side (timm's
// default symmetric padding), every BatchNorm is followed by ReLU except a UIR's dw_start and
// pw_proj and an EdgeResidual's conv_pwl, and a UIR or EdgeResidual adds its input when its
// input and output channels agree and its stride is 1 (ConvBnAct never does).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fk::models::vision {

enum class MobileNetV4BlockKind : uint8_t { conv_bn_act, edge_residual, uir };

// One resolved block: "blocks.<stage>.<index>." in the state dict.
struct MobileNetV4Block {
  std::string prefix;  // "blocks.2.0."
  MobileNetV4BlockKind kind = MobileNetV4BlockKind::conv_bn_act;
  int64_t c_in = 0, c_out = 0;
  int64_t mid = 0;        // UIR: pw_exp's, EdgeResidual: conv_exp's output channels (make_divisible(c_in * e))
  int kernel = 1;         // ConvBnAct: its conv's kernel; EdgeResidual: conv_exp's
  int dw_start = 0;       // UIR: dw_start's kernel (0: none)
  int dw_mid = 0;         // UIR: dw_mid's kernel (0: none)
  int stride = 1;         // on dw_mid if present, else dw_start (ConvBnAct: its conv; EdgeResidual: conv_exp)
  bool residual = false;  // UIR or EdgeResidual with c_in == c_out and stride 1
  int64_t out_size = 0;   // the output's height (= width) at the config's image size
};

struct MobileNetV4Config {
  std::string model_type = "mobilenetv4";
  std::string variant = "conv_small";
  int64_t num_classes = 1000;
  int64_t image_size = 224;
  double crop_pct = 0.875;  // timm's eval crop: conv_small's 0.875, conv_medium's (r256) 0.95
  double channel_multiplier = 1.0;
  int64_t num_features = 1280;
  double bn_eps = 1e-5;
  int64_t stem_channels = 32;
  std::vector<MobileNetV4Block> blocks;

  int64_t stem_size() const;                                     // the stem's output height
  int64_t last_channels() const { return blocks.back().c_out; }  // global_avg_pool's C
};

// timm's make_divisible(v, 8) and round_channels(c, multiplier): the nearest multiple of 8,
// at least 8, never more than 10% below v.
int64_t mobilenetv4_make_divisible(double v);
int64_t mobilenetv4_round_channels(int64_t channels, double multiplier);

// Parses config text; `source` names it in errors. Throws fk::Error naming the field or the
// unsupported variant.
MobileNetV4Config parse_mobilenetv4_config(std::string_view config_json, std::string_view source);

}  // namespace fk::models::vision
