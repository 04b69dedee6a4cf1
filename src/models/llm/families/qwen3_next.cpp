// Qwen3-Next: gated DeltaNet (linear attention with a recurrent state per sequence) in three
// of four layers, gated full attention in the fourth (q_proj gives each head a query and an
// output gate; per-head q/k RMSNorms; partial rotary), (1 + w) RMSNorms everywhere (without
// Gemma's embedding scale), and sparse MoE blocks with a sigmoid-gated shared expert
// (Qwen2-MoE's, with norm_topk_prob). The checkpoint's q/k norms are offsets from one: the
// loader adds the one, so the fused qk_norm_rope path applies them as plain weights.
#include "models/llm/model_spec.h"

namespace fk::engine {
namespace {

void resolve_qwen3_next(ModelSpec& s) {
  s.norm = NormKind::gemma_rms;
  s.qk_norm = true;
  s.qk_norm_weight_offset = true;
  s.attention_output_gate = s.config.attention_output_gate;
  resolve_moe(s, /*gated_shared_expert=*/true);
}

const ModelFamilyRegistrar kQwen3Next({"qwen3_next", {"qwen3_next"}, resolve_qwen3_next});

}  // namespace
}  // namespace fk::engine
