// Vision models in the model registry. YOLOv10: the n / s / m production configs (640 x 640,
// 80 classes, dummy weights) and a tiny config of the n graph at half its width, 64 x 64,
// 8 classes, which is also the config of the golden checkpoint
// (tests/data/models/yolov10/, made by tests/data/models/make_yolov10_goldens.py).
#include "models/registry.h"
#include "models/vision/convnextv2/convnextv2_model.h"
#include "models/vision/mobilenetv4/mobilenetv4_model.h"
#include "models/vision/yolov10/yolov10_model.h"

namespace fk::models::vision {
namespace {

constexpr const char* kYolov10n = R"({"model_type": "yolov10", "scale": "n", "nc": 80, "imgsz": 640})";
constexpr const char* kYolov10s = R"({"model_type": "yolov10", "scale": "s", "nc": 80, "imgsz": 640})";
constexpr const char* kYolov10m = R"({"model_type": "yolov10", "scale": "m", "nc": 80, "imgsz": 640})";
// Width 0.125 is the narrowest whose PSA keeps one attention head of 64.
constexpr const char* kTinyYolov10 =
    R"({"model_type": "yolov10", "scale": "n", "width_multiple": 0.125, "nc": 8, "imgsz": 64})";

ModelRegistration yolov10() {
  ModelRegistration r;
  r.architecture = "yolov10";
  r.names = {"YOLOv10n"};
  r.category = "edge-detection";
  r.pattern = RunPattern::batch;
  r.config_types = {"yolov10"};
  r.presets = {
      {"yolov10n", PresetKind::production,
       "YOLOv10-N: 640 x 640, 80 classes; C2f / C2fCIB, SCDown, SPPF, PSA, NMS-free one-to-one head", kYolov10n},
      {"yolov10s", PresetKind::production, "YOLOv10-S: 640 x 640, 80 classes", kYolov10s},
      {"yolov10m", PresetKind::production, "YOLOv10-M: 640 x 640, 80 classes", kYolov10m},
      {"tiny-yolov10", PresetKind::tiny, "the n graph at width 0.125, 64 x 64, 8 classes", kTinyYolov10}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "Yolov10Golden.TinyMatchesPyTorchReference";
  r.factory = [](std::string_view json, std::string_view source) { return Yolov10Model::from_config(json, source); };
  return r;
}

const ModelRegistrar kYolov10(yolov10());

// MobileNetV4: timm's mobilenetv4_conv_medium (256 x 256, its trained resolution) and
// _conv_small (224 x 224), 1000 classes, dummy weights; and tiny configs of both block graphs
// at a quarter of their width with a 128-wide head, 64 x 64, 10 classes: the configs of the
// golden checkpoints (tests/data/models/vision/mobilenetv4/ and mobilenetv4_medium/, made by
// tests/data/models/vision/make_mobilenetv4_goldens.py).
constexpr const char* kMobileNetV4ConvSmall =
    R"({"model_type": "mobilenetv4", "variant": "conv_small", "num_classes": 1000, "image_size": 224})";
constexpr const char* kMobileNetV4ConvMedium =
    R"({"model_type": "mobilenetv4", "variant": "conv_medium", "num_classes": 1000, "image_size": 256})";
constexpr const char* kTinyMobileNetV4Medium =
    R"({"model_type": "mobilenetv4", "variant": "conv_medium", "channel_multiplier": 0.25, "num_features": 128,)"
    R"( "num_classes": 10, "image_size": 64})";
constexpr const char* kTinyMobileNetV4 =
    R"({"model_type": "mobilenetv4", "variant": "conv_small", "channel_multiplier": 0.25, "num_features": 128,)"
    R"( "num_classes": 10, "image_size": 64})";

ModelRegistration mobilenetv4() {
  ModelRegistration r;
  r.architecture = "mobilenetv4";
  r.names = {"MobileNetV4"};
  r.category = "edge-detection";
  r.pattern = RunPattern::batch;
  // The engine's own config form, and timm's hub config.json, which names the model (the
  // variants the engine does not build are refused by name when parsed).
  r.config_types = {"mobilenetv4",
                    "mobilenetv4_conv_small",
                    "mobilenetv4_conv_medium",
                    "mobilenetv4_conv_large",
                    "mobilenetv4_hybrid_medium",
                    "mobilenetv4_hybrid_large",
                    "mobilenetv4_conv_aa_large",
                    "mobilenetv4_conv_blur_medium"};
  r.presets = {
      {"mobilenetv4-conv-medium", PresetKind::production,
       "MobileNetV4-Conv-M: 256 x 256, 1000 classes; EdgeResidual (FusedIB) and UIR blocks, ReLU, BatchNorm "
       "folded",
       kMobileNetV4ConvMedium},
      {"mobilenetv4-conv-small", PresetKind::production,
       "MobileNetV4-Conv-S: 224 x 224, 1000 classes; ConvBnAct and UIR blocks, ReLU, BatchNorm folded",
       kMobileNetV4ConvSmall},
      {"tiny-mobilenetv4", PresetKind::tiny,
       "the conv_small graph at channel multiplier 0.25, a 128-wide head, 64 x 64, 10 classes", kTinyMobileNetV4},
      {"tiny-mobilenetv4-medium", PresetKind::tiny,
       "the conv_medium graph at channel multiplier 0.25, a 128-wide head, 64 x 64, 10 classes",
       kTinyMobileNetV4Medium}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "MobileNetV4Golden.TinyMediumMatchesTimm";
  r.factory = [](std::string_view json, std::string_view source) {
    return MobileNetV4Model::from_config(json, source);
  };
  return r;
}

const ModelRegistrar kMobileNetV4(mobilenetv4());

// ConvNeXt V2: transformers' ConvNextV2-B at 384 x 384 (facebook/convnextv2-base-22k-384's
// graph, 1000 classes, dummy weights) and the tiny config of the golden checkpoint
// (tests/data/models/vision/convnextv2/, made by tests/data/models/vision/make_convnextv2_goldens.py).
constexpr const char* kConvNextV2Base =
    R"({"model_type": "convnextv2", "depths": [3, 3, 27, 3], "hidden_sizes": [128, 256, 512, 1024],)"
    R"( "image_size": 384, "num_labels": 1000})";
constexpr const char* kTinyConvNextV2 =
    R"({"model_type": "convnextv2", "depths": [1, 1, 2, 1], "hidden_sizes": [8, 16, 24, 32], "image_size": 64,)"
    R"( "num_labels": 10})";

ModelRegistration convnextv2() {
  ModelRegistration r;
  r.architecture = "convnextv2";
  r.names = {"ConvNeXtV2"};
  r.category = "edge-detection";
  r.pattern = RunPattern::batch;
  r.config_types = {"convnextv2"};
  r.presets = {
      {"convnextv2-base", PresetKind::production,
       "ConvNeXtV2-B: 384 x 384, 1000 classes; 7x7 depthwise convs, LayerNorm, GELU MLPs with GRN", kConvNextV2Base},
      {"tiny-convnextv2", PresetKind::tiny, "depths 1-1-2-1, widths 8-16-24-32, 64 x 64, 10 classes", kTinyConvNextV2}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "ConvNextV2Golden.TinyMatchesTransformers";
  r.factory = [](std::string_view json, std::string_view source) { return ConvNextV2Model::from_config(json, source); };
  return r;
}

const ModelRegistrar kConvNextV2(convnextv2());

}  // namespace
}  // namespace fk::models::vision
