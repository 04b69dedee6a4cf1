// The vision-language models in the model registry. Qwen3-VL (qwen3_vl) generates text from
// images on the Generate pattern: the engine runs its text model (a DecoderLlm of the
// qwen3_vl_text family, M-RoPE) and its vision tower at each image request's first prefill
// step (models/vlm/qwen3_vl/image_encoder.h). The vision tower also runs alone as a Batch
// model (qwen3_vl_vision). Presets: Qwen3-VL-8B-Instruct's config (dummy weights) and the
// tiny config of the goldens (tests/data/models/qwen3_vl/, make_qwen3_vl_vision_goldens.py).
#include "models/llm/decoder_llm.h"
#include "models/llm/model_config.h"
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
  // A vision_config alone; a whole Qwen3-VL checkpoint (model_type qwen3_vl) is qwen3_vl.
  r.config_types = {"qwen3_vl_vision"};
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

ModelRegistration qwen3_vl() {
  ModelRegistration r;
  r.architecture = "qwen3_vl";
  r.names = {"Qwen3-VL"};
  r.category = "multimodal-encoders";
  r.pattern = RunPattern::generate;
  r.config_types = {"qwen3_vl"};  // a qwen3_vl_moe text model is refused by name (model_config.cpp)
  r.presets = {{"qwen3-vl-8b", PresetKind::production,
                "Qwen3-VL-8B-Instruct: 36 text layers of 4096, GQA 32/8, interleaved M-RoPE (24/20/20), "
                "deepstack into layers 0-2; the 27-block vision tower",
                kQwen3VL8BConfig},
               {"tiny-qwen3-vl", PresetKind::tiny,
                "2 text layers of 24 (2 heads of 16, M-RoPE 4/2/2), the 3-block vision tower of 32 of the goldens",
                kTinyQwen3VLConfig}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "Qwen3VLGenerateGolden.LogitsAndGreedyTokensMatchTransformers/qwen3_vl_generate";
  r.factory = [](std::string_view json, std::string_view source) {
    return engine::DecoderLlm::from_config("qwen3_vl", json, source);
  };
  return r;
}

const ModelRegistrar kQwen3VL(qwen3_vl());

}  // namespace
}  // namespace fk::models::vlm
