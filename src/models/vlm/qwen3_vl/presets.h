// The Qwen3-VL configs the registry and the tests build from: Qwen3-VL-8B-Instruct's
// published config.json (its vision_config and text_config) and a tiny config of the same
// architecture (also the golden script's, tests/data/models/make_qwen3_vl_vision_goldens.py).
#pragma once

namespace fk::models::vlm {

extern const char* const kQwen3VL8BConfig;
extern const char* const kTinyQwen3VLConfig;

}  // namespace fk::models::vlm
