// Llama 2/3/3.1 and Mistral: pre-norm RMSNorm decoder, fused SwiGLU MLP, neox rope
// (with llama3 scaling where the config asks), optional sliding window (Mistral v0.1).
#include "models/llm/model_spec.h"

namespace fk::engine {
namespace {

void resolve_llama(ModelSpec& s) { s.norm = NormKind::rms; }

const ModelFamilyRegistrar kLlama({"llama", {"llama", "mistral"}, resolve_llama});

}  // namespace
}  // namespace fk::engine
