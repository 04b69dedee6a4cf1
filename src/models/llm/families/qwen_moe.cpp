// Qwen3-MoE: Qwen3's attention (per-head q/k RMSNorm before rope, no biases) with sparse
// MoE blocks (softmax top-k, renormalised when norm_topk_prob) in the layers the config
// makes sparse (decoder_sparse_step, mlp_only_layers); the other layers keep a dense MLP.
#include "models/llm/model_spec.h"

namespace fk::engine {
namespace {

void resolve_qwen_moe(ModelSpec& s) {
  s.norm = NormKind::rms;
  s.qk_norm = s.config.qk_norm == QkNorm::per_head;
  resolve_moe(s);
}

const ModelFamilyRegistrar kQwenMoe({"qwen_moe", {"qwen3_moe"}, resolve_qwen_moe});

}  // namespace
}  // namespace fk::engine
