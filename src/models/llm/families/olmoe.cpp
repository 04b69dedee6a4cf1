// OLMoE: a Llama-style decoder whose q and k projections are RMS-normalised over their
// whole width (all heads at once) before rope, with a sparse MoE block in every layer
// (softmax top-k; the weights are not renormalised unless norm_topk_prob).
#include "models/llm/model_spec.h"
#include "fk/status.h"

namespace fk::engine {
namespace {

void resolve_olmoe(ModelSpec& s) {
  s.norm = NormKind::rms;
  if (s.config.clip_qkv > 0)
    FK_FAIL(FK_ERR_UNSUPPORTED, "model_type 'olmoe': clip_qkv (", s.config.clip_qkv,
            ") is not supported by the engine");
  s.qk_norm_across_heads = s.config.qk_norm == QkNorm::across_heads;
  resolve_moe(s);
}

const ModelFamilyRegistrar kOlmoe({"olmoe", {"olmoe"}, resolve_olmoe});

}  // namespace
}  // namespace fk::engine
