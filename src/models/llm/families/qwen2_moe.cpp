// Qwen1.5-MoE / Qwen2-MoE: Qwen2's attention (q, k and v biased unless the config's
// qkv_bias says otherwise; no o bias, no q/k norms) with sparse MoE blocks (softmax top-k,
// renormalised when norm_topk_prob) in the layers the config makes sparse
// (decoder_sparse_step, mlp_only_layers; the others keep a dense MLP). Each sparse block
// adds a shared expert: a SwiGLU MLP every token runs, scaled by sigmoid(x . w) per token.
#include "models/llm/model_spec.h"

namespace fk::engine {
namespace {

void resolve_qwen2_moe(ModelSpec& s) {
  s.norm = NormKind::rms;
  resolve_moe(s, /*gated_shared_expert=*/true);
}

const ModelFamilyRegistrar kQwen2Moe({"qwen2_moe", {"qwen2_moe"}, resolve_qwen2_moe});

}  // namespace
}  // namespace fk::engine
