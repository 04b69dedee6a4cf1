// Gemma 1/2/3: RMSNorm with (1 + w) weights, embeddings scaled by sqrt(hidden), GeGLU MLP
// (tanh gelu), tied embeddings. Gemma 2/3 add sandwich norms (after attention and after
// the MLP), sliding-window layers and, Gemma 2, logit soft-capping in attention and at the
// head. Gemma 3 adds per-head q/k norms and a separate rope base for its local layers.
#include "models/llm/model_spec.h"

namespace fk::engine {
namespace {

void resolve_gemma(ModelSpec& s) {
  const ModelConfig& c = s.config;
  s.norm = NormKind::gemma_rms;
  s.scale_embeddings = true;
  if (c.sandwich_norm) {
    s.sandwich_norm = true;
    s.pre_mlp_norm_name = "pre_feedforward_layernorm";
    s.post_attn_norm_name = "post_attention_layernorm";
    s.post_mlp_norm_name = "post_feedforward_layernorm";
  }
  if (c.qk_norm == QkNorm::per_head) {
    s.qk_norm = true;
    s.qk_norm_weight_offset = true;
  }
  if (c.rope_local_base_freq > 0) {
    // Local (sliding) layers: their own theta and no scaling (HF's rotary_emb_local).
    ModelConfig local = c;
    local.rope_scaling = RopeScaling{};
    s.ropes.push_back(rope_config_of(local, c.rope_local_base_freq));
    for (size_t l = 0; l < s.layers.size(); ++l)
      if (c.layer_types[l] == AttentionKind::sliding) s.layers[l].rope_index = 1;
  }
}

const ModelFamilyRegistrar kGemma({"gemma", {"gemma", "gemma2", "gemma3_text"}, resolve_gemma});

}  // namespace
}  // namespace fk::engine
