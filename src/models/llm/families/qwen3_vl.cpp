// Qwen3-VL's text model (qwen3_vl_text, the "text_config" of a Qwen3-VL checkpoint): Qwen3's
// layers (per-head q/k RMSNorm, no biases) with interleaved M-RoPE (config.mrope_section).
// Its weights sit under "model.language_model." beside the vision tower's "model.visual."
// (models/vlm/qwen3_vl/); the head is "lm_head.weight" or the tied embeddings. What differs
// from Qwen3 at run time is only the positions of image prompts: DecoderModel rotates by
// ForwardBatch::mrope_positions when a step carries them, and decode steps use the ordinary
// rotary embedding at position + rope delta (all three M-RoPE rows equal).
#include "models/llm/model_spec.h"

namespace fk::engine {
namespace {

void resolve_qwen3_vl(ModelSpec& s) {
  s.norm = NormKind::rms;
  s.qk_norm = true;
  s.prefix = "model.language_model.";
}

const ModelFamilyRegistrar kQwen3VL({"qwen3_vl", {"qwen3_vl_text"}, resolve_qwen3_vl});

}  // namespace
}  // namespace fk::engine
