// The vision-language models in the model registry. Qwen3-VL's vision tower runs alone as a
// Batch model (qwen3_vl_vision) until its text side is wired into the decoder: presets
// Qwen3-VL-8B-Instruct's config (dummy weights) and the tiny config of the goldens
// (tests/data/models/qwen3_vl/, made by make_qwen3_vl_vision_goldens.py).
#include "models/registry.h"
#include "models/vlm/qwen3_vl/presets.h"
#include "models/vlm/qwen3_vl/vision_model.h"

namespace fk::models::vlm {
namespace {

ModelRegistration qwen3_vl_vision() {
  ModelRegistration r;
  r.architecture = "qwen3_vl_vision";
  r.names = {"Qwen3-VL vision tower"};
  r.category = "multimodal-encoders";
  r.pattern = RunPattern::batch;
  // A Qwen3-VL checkpoint folder loads as its vision tower until the whole VLM is registered
  // (which then takes qwen3_vl over); a vision_config alone is qwen3_vl_vision.
  r.config_types = {"qwen3_vl", "qwen3_vl_vision"};
  r.presets = {{"qwen3-vl-8b-vision", PresetKind::production,
                "Qwen3-VL-8B-Instruct's vision tower: 27 blocks of 1152, 16 heads of 72, 16x16 patches of 2 frames, "
                "2x2 merge to 4096, deepstack after blocks 8/16/24",
                kQwen3VL8BConfig},
               {"tiny-qwen3-vl-vision", PresetKind::tiny,
                "3 blocks of 32, 2 heads of 16, 4x4 patches, a 4x4 position grid, merged to 24; deepstack after 0 and 2",
                kTinyQwen3VLConfig}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "Qwen3VLGolden.VisionTowerMatchesTransformersCpu/qwen3_vl";
  r.factory = [](std::string_view json, std::string_view source) { return Qwen3VLVisionModel::from_config(json, source); };
  return r;
}

const ModelRegistrar kQwen3VLVision(qwen3_vl_vision());

}  // namespace
}  // namespace fk::models::vlm
