#include "models/llm/model_spec.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "models/llm/fp8_blocks.h"
#include "fk/status.h"

namespace fk::engine {

namespace {

std::vector<ModelFamily>& families() {
  static std::vector<ModelFamily> f;
  return f;
}

}  // namespace

ModelFamilyRegistrar::ModelFamilyRegistrar(ModelFamily family) { families().push_back(std::move(family)); }

RopeConfig rope_config_of(const ModelConfig& c, double theta) {
  RopeConfig r;
  r.theta = theta;
  const RopeScaling& s = c.rope_scaling;
  switch (s.type) {
    case RopeScalingKind::none: r.scaling = RopeScalingType::none; break;
    case RopeScalingKind::linear:
      r.scaling = RopeScalingType::linear;
      r.factor = s.factor;
      break;
    case RopeScalingKind::llama3:
      r.scaling = RopeScalingType::llama3;
      r.factor = s.factor;
      r.low_freq_factor = s.low_freq_factor;
      r.high_freq_factor = s.high_freq_factor;
      r.original_max_position_embeddings = static_cast<double>(s.original_max_position_embeddings);
      break;
    case RopeScalingKind::yarn:
      r.scaling = RopeScalingType::yarn;
      r.factor = s.factor;
      r.original_max_position_embeddings = static_cast<double>(s.original_max_position_embeddings);
      r.beta_fast = s.beta_fast;
      r.beta_slow = s.beta_slow;
      r.mscale = s.mscale;
      r.mscale_all_dim = s.mscale_all_dim;
      r.attention_factor = s.attention_factor.value_or(0.0);
      r.yarn_truncate = s.truncate ? 1 : 0;
      break;
    case RopeScalingKind::dynamic:
      // Dynamic NTK changes the frequencies with the sequence length: one cache per length,
      // which the paged engine (positions of many sequences in one batch) does not build.
      FK_FAIL(FK_ERR_UNSUPPORTED, "model_type '", c.model_type,
              "': rope_scaling 'dynamic' is not supported by the engine (default, linear, llama3 and yarn are)");
  }
  return r;
}

MlpActivation activation_of(const std::string& act) {
  if (act == "silu") return MlpActivation::silu;
  if (act == "gelu") return MlpActivation::gelu;
  if (act == "gelu_pytorch_tanh" || act == "gelu_new" || act == "gelu_fast") return MlpActivation::gelu_tanh;
  FK_FAIL(FK_ERR_UNSUPPORTED, "hidden activation '", act, "' is not supported by the engine's gated MLP");
}

void resolve_moe(ModelSpec& s, bool gated_shared_expert) {
  const MoeConfig& m = s.config.moe;
  if (m.shared_expert_intermediate_size > 0 && !gated_shared_expert)
    FK_FAIL(FK_ERR_UNSUPPORTED, "model_type '", s.config.model_type, "': shared experts (shared_expert_intermediate_size ",
            m.shared_expert_intermediate_size, ") are not part of this family's MoE layers in the engine (it runs "
            "qwen2_moe's sigmoid-gated one)");
  if (activation_of(s.config.hidden_act) != MlpActivation::silu)
    FK_FAIL(FK_ERR_UNSUPPORTED, "model_type '", s.config.model_type, "': experts with activation '",
            s.config.hidden_act, "' are not supported (fused_experts is SwiGLU)");
  s.moe.enabled = true;
  s.moe.num_experts = m.num_experts;
  s.moe.top_k = m.num_experts_per_tok;
  s.moe.intermediate = m.expert_intermediate_size;
  s.moe.renormalize = m.norm_topk_prob;
  s.moe.shared_intermediate = gated_shared_expert ? m.shared_expert_intermediate_size : 0;
}

namespace {

std::string block_size_string(const std::vector<int64_t>& b) {
  std::string s = "[";
  for (size_t i = 0; i < b.size(); ++i) s += (i ? ", " : "") + std::to_string(b[i]);
  return s + "]";
}

// What the engine runs of config.json's quantization_config: block fp8 with 128 x 128
// blocks (fused_experts' scale layout) and dynamic activations (the engine keeps them in
// the model dtype: weight-only), and nothing else.
void resolve_quantization(ModelSpec& s) {
  const QuantizationConfig& q = s.config.quantization;
  if (q.quant_method.empty()) return;
  const std::string what = concat("model_type '", s.config.model_type, "': quantization_config ");
  if (q.quant_method != "fp8")
    FK_FAIL(FK_ERR_UNSUPPORTED, what, "quant_method '", q.quant_method,
            "' is not supported by the engine (it loads block-scaled \"fp8\" checkpoints, weight_block_size "
            "[128, 128])");
  if (q.weight_block_size.empty())
    FK_FAIL(FK_ERR_UNSUPPORTED, what, "quant_method 'fp8' without weight_block_size (per-tensor scales) is not "
            "supported by the engine (it loads block-scaled fp8, weight_block_size [128, 128])");
  if (q.weight_block_size != std::vector<int64_t>{kFp8Block, kFp8Block})
    FK_FAIL(FK_ERR_UNSUPPORTED, what, "fp8 weight_block_size ", block_size_string(q.weight_block_size),
            " is not supported by the engine (its fp8 experts use [128, 128] blocks)");
  if (!q.activation_scheme.empty() && q.activation_scheme != "dynamic")
    FK_FAIL(FK_ERR_UNSUPPORTED, what, "fp8 activation_scheme '", q.activation_scheme,
            "' is not supported with block scales (only 'dynamic')");
  s.fp8_checkpoint = true;
  s.moe.fp8 = s.moe.enabled;
}

}  // namespace

void apply_quantization(ModelSpec& spec, const std::string& quantization) {
  if (quantization.empty()) return;
  if (quantization != "fp8")
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "quantization '", quantization,
            "' is not supported by the engine (\"fp8\": block-scaled fp8 experts of MoE models)");
  if (!spec.moe.enabled)
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "quantization 'fp8' runs the routed experts of MoE models in fp8, and "
            "model_type '", spec.config.model_type, "' is dense (no experts)");
  spec.moe.fp8 = true;
}

int64_t ModelSpec::kv_layer(int64_t l) const {
  if (is_linear_layer(l)) return -1;
  int64_t k = 0;
  for (int64_t i = 0; i < l; ++i) k += is_linear_layer(i) ? 0 : 1;
  return k;
}

int64_t ModelSpec::num_kv_layers() const {
  int64_t k = 0;
  for (int64_t i = 0; i < num_layers(); ++i) k += is_linear_layer(i) ? 0 : 1;
  return k;
}

ModelSpec model_spec_for(const ModelConfig& config) {
  ModelSpec s;
  s.config = config;
  s.activation = activation_of(config.hidden_act);
  s.qkv_bias = config.attention_bias;
  s.o_bias = config.attention_out_bias;
  s.mlp_bias = config.mlp_bias;
  s.tie_word_embeddings = config.tie_word_embeddings;
  s.final_logit_soft_cap = static_cast<float>(config.final_logit_softcapping);
  s.rms_norm_eps = static_cast<float>(config.rms_norm_eps);
  s.sm_scale = static_cast<float>(config.attention_scale());
  s.ropes = {rope_config_of(config, config.rope_theta)};
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    LayerAttention a;
    a.logits_soft_cap = static_cast<float>(config.attn_logit_softcapping);
    a.linear = config.layer_types[static_cast<size_t>(l)] == AttentionKind::linear;
    if (config.layer_types[static_cast<size_t>(l)] == AttentionKind::sliding && config.sliding_window > 0)
      a.window_left = static_cast<int32_t>(config.sliding_window - 1);  // HF: q - k < sliding_window
    s.layers.push_back(a);
  }
  for (const ModelFamily& f : families()) {
    if (std::find(f.model_types.begin(), f.model_types.end(), config.model_type) == f.model_types.end()) continue;
    s.family = f.name;
    f.resolve(s);
    if (config.is_moe() && !s.moe.enabled)
      FK_FAIL(FK_ERR_UNSUPPORTED, "model_type '", config.model_type,
              "' has mixture-of-experts layers, which its model family does not run");
    resolve_quantization(s);
    if (config.has_linear_attention() != (s.family == "qwen3_next"))
      FK_FAIL(FK_ERR_UNSUPPORTED, "model_type '", config.model_type, "': linear-attention layers are run by the qwen3_next family only");
    return s;
  }
  std::string known;
  for (const ModelFamily& f : families())
    for (const auto& t : f.model_types) known += (known.empty() ? "" : ", ") + t;
  FK_FAIL(FK_ERR_UNSUPPORTED, "model_type '", config.model_type, "' has no model in the engine (it runs: ", known, ")");
}

}  // namespace fk::engine
