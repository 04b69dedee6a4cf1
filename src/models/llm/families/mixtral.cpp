// Mixtral: Mistral's decoder (RMSNorm, neox rope, GQA, optional sliding window) with a
// sparse MoE block in every layer: softmax top-k routing with renormalised weights over
// SwiGLU experts. Checkpoints name the block "block_sparse_moe" and an expert's
// projections w1 (gate), w3 (up), w2 (down); transformers 5's fused layout ("mlp",
// experts.gate_up_proj / experts.down_proj) loads too.
#include "models/llm/model_spec.h"

namespace fk::engine {
namespace {

void resolve_mixtral(ModelSpec& s) {
  s.norm = NormKind::rms;
  resolve_moe(s);
  s.moe.renormalize = true;
  s.moe.module_names = {"block_sparse_moe", "mlp"};
  s.moe.expert_weight_names = {{"w1", "w3", "w2"}, {"gate_proj", "up_proj", "down_proj"}};
}

const ModelFamilyRegistrar kMixtral({"mixtral", {"mixtral"}, resolve_mixtral});

}  // namespace
}  // namespace fk::engine
