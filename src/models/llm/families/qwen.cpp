// Qwen2/2.5 (biases on q, k and v) and Qwen3 (no biases; per-head q/k RMSNorm before rope,
// applied by the fused qk_norm_rope op).
#include "models/llm/model_spec.h"

namespace fk::engine {
namespace {

void resolve_qwen(ModelSpec& s) {
  s.norm = NormKind::rms;
  // The config resolves which of the two applies: qwen2 sets attention_bias, qwen3 qk_norm.
  s.qk_norm = s.config.qk_norm == QkNorm::per_head;
}

const ModelFamilyRegistrar kQwen({"qwen", {"qwen2", "qwen3"}, resolve_qwen});

}  // namespace
}  // namespace fk::engine
