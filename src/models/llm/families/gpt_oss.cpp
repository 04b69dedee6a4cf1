// gpt-oss (GptOssForCausalLM): Llama's decoder (RMSNorm, neox rope, GQA) with q/k/v/o
// biases, a learned sink logit per query head in every attention softmax, sliding (128) and
// full attention layers alternating, YaRN rope (truncate false), and an MoE block in every
// layer: a router linear with a bias, softmax over the top-k logits (the renormalised
// top-k), and experts with biases and the clamped SwiGLU. The released checkpoints hold the
// experts in MXFP4 (gate_up_proj_blocks / _scales), which is refused by name.
#include "models/llm/model_spec.h"

#include "fk/status.h"

namespace fk::engine {
namespace {

void resolve_gpt_oss(ModelSpec& s) {
  const ModelConfig& c = s.config;
  if (c.quantization.quant_method == "mxfp4")
    FK_FAIL(FK_ERR_UNSUPPORTED, "model_type 'gpt_oss': quantization_config quant_method 'mxfp4' (experts stored as "
            "gate_up_proj_blocks / _scales, 4-bit values with an E8M0 scale per 32) is not supported by the engine: "
            "give it a checkpoint with the experts dequantized to bf16 (gate_up_proj [E, H, 2I], down_proj [E, I, H])");
  s.norm = NormKind::rms;
  s.attention_sinks = c.attention_sinks;
  // resolve_moe's checks (no shared expert; the config's SiLU names the gate's activation)
  // hold for gpt-oss; its experts then run the clamped SwiGLU.
  resolve_moe(s);
  s.moe.renormalize = true;
  s.moe.swigluoai = true;
  s.moe.swiglu_alpha = static_cast<float>(c.swiglu_alpha);
  s.moe.swiglu_limit = static_cast<float>(c.swiglu_limit);
  s.moe.router_name = "router";
}

const ModelFamilyRegistrar kGptOss({"gpt_oss", {"gpt_oss"}, resolve_gpt_oss});

}  // namespace
}  // namespace fk::engine
