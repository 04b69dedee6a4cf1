// gpt-oss (GptOssForCausalLM): Llama's decoder (RMSNorm, neox rope, GQA) with q/k/v/o
// biases, a learned sink logit per query head in every attention softmax, sliding (128) and
// full attention layers alternating, YaRN rope (truncate false), and an MoE block in every
// layer: a router linear with a bias, softmax over the top-k logits (the renormalised
// top-k), and experts with biases and the clamped SwiGLU. The released checkpoints hold the
// experts in MXFP4 (gate_up_proj_blocks / _scales): dequantized to bf16 at load.
#include "models/llm/model_spec.h"

#include "fk/status.h"

namespace fk::engine {
namespace {

void resolve_gpt_oss(ModelSpec& s) {
  const ModelConfig& c = s.config;
  // MXFP4 experts (quant_method "mxfp4": the released checkpoints) are dequantized to the
  // model dtype at load (weights.cpp); nothing else of the checkpoint is quantized, so the
  // spec runs as a 16-bit model. Other methods stay refused (resolve_quantization).
  if (c.quantization.quant_method == "mxfp4") {
    s.mxfp4_experts = true;
    s.config.quantization = QuantizationConfig{};
  }
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
