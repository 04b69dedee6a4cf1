// Vision models in the model registry. YOLOv10: the n / s / m production configs (640 x 640,
// 80 classes, dummy weights) and a tiny config of the n graph at half its width, 64 x 64,
// 8 classes, which is also the config of the golden checkpoint
// (tests/data/models/yolov10/, made by tests/data/models/make_yolov10_goldens.py).
#include "models/registry.h"
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
  r.presets = {{"yolov10n", PresetKind::production,
                "YOLOv10-N: 640 x 640, 80 classes; C2f / C2fCIB, SCDown, SPPF, PSA, NMS-free one-to-one head",
                kYolov10n},
               {"yolov10s", PresetKind::production, "YOLOv10-S: 640 x 640, 80 classes", kYolov10s},
               {"yolov10m", PresetKind::production, "YOLOv10-M: 640 x 640, 80 classes", kYolov10m},
               {"tiny-yolov10", PresetKind::tiny, "the n graph at width 0.125, 64 x 64, 8 classes", kTinyYolov10}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "Yolov10Golden.TinyMatchesPyTorchReference";
  r.factory = [](std::string_view json, std::string_view source) { return Yolov10Model::from_config(json, source); };
  return r;
}

const ModelRegistrar kYolov10(yolov10());

}  // namespace
}  // namespace fk::models::vision
