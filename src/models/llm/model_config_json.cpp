// ModelConfig -> config.json text. Every resolved field is written explicitly (including
// "layer_types"), so parsing the text back gives an equal ModelConfig whatever the
// family's defaults are.
#include <nlohmann/json.hpp>

#include "models/llm/model_config_families.h"
#include "models/llm/model_config.h"
#include "fk/status.h"

namespace fk {

namespace {

using nlohmann::json;
using model_config_detail::AttentionBiasRule;
using model_config_detail::MoeRule;
using model_config_detail::SlidingRule;

std::string_view torch_dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f16: return "float16";
    case DType::bf16: return "bfloat16";
    case DType::f8e4m3fn: return "float8_e4m3fn";
    case DType::f8e5m2: return "float8_e5m2";
    case DType::f64: return "float64";
    default: return dtype_name(t);
  }
}

json optional_json(double v) { return v > 0 ? json(v) : json(nullptr); }

json rope_scaling_json(const RopeScaling& r) {
  if (r.type == RopeScalingKind::none) return nullptr;
  json j = {{"rope_type", rope_scaling_kind_name(r.type)}, {"factor", r.factor}};
  switch (r.type) {
    case RopeScalingKind::llama3:
      j["low_freq_factor"] = r.low_freq_factor;
      j["high_freq_factor"] = r.high_freq_factor;
      j["original_max_position_embeddings"] = r.original_max_position_embeddings;
      break;
    case RopeScalingKind::yarn:
      j["beta_fast"] = r.beta_fast;
      j["beta_slow"] = r.beta_slow;
      j["mscale"] = r.mscale;
      j["mscale_all_dim"] = r.mscale_all_dim;
      j["original_max_position_embeddings"] = r.original_max_position_embeddings;
      if (r.attention_factor) j["attention_factor"] = *r.attention_factor;
      j["truncate"] = r.truncate;
      break;
    case RopeScalingKind::dynamic:
      j["original_max_position_embeddings"] = r.original_max_position_embeddings;
      break;
    default: break;
  }
  return j;
}

}  // namespace

std::string model_config_to_json(const ModelConfig& c) {
  const auto* fam = model_config_detail::find_family(c.model_type);
  FK_CHECK(fam != nullptr, "model_config_to_json: unsupported model_type '", c.model_type, "'");
  json j;
  j["model_type"] = c.model_type;
  j["architectures"] = c.architectures;
  j["hidden_size"] = c.hidden_size;
  if (c.intermediate_size > 0) j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["vocab_size"] = c.vocab_size;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope_theta;
  j["rope_scaling"] = rope_scaling_json(c.rope_scaling);
  if (!c.mrope_section.empty()) {  // qwen3_vl_text: M-RoPE rides on an unscaled rope
    if (j["rope_scaling"].is_null()) j["rope_scaling"] = {{"rope_type", "default"}};
    j["rope_scaling"]["mrope_section"] = c.mrope_section;
    j["rope_scaling"]["mrope_interleaved"] = c.mrope_interleaved;
  }
  j["rope_local_base_freq"] = optional_json(c.rope_local_base_freq);
  j["partial_rotary_factor"] = c.partial_rotary_factor;
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  j[fam->gemma ? "hidden_activation" : "hidden_act"] = c.hidden_act;
  if (fam->attention_bias == AttentionBiasRule::configurable) j["attention_bias"] = c.attention_bias;
  if (fam->attention_bias == AttentionBiasRule::qkv_key) j["qkv_bias"] = c.attention_bias;
  if (fam->reads_mlp_bias) j["mlp_bias"] = c.mlp_bias;
  j["sliding_window"] = c.sliding_window > 0 ? json(c.sliding_window) : json(nullptr);
  if (fam->sliding == SlidingRule::qwen) j["use_sliding_window"] = c.sliding_window > 0;
  json layer_types = json::array();
  for (AttentionKind k : c.layer_types)
    layer_types.push_back(k == AttentionKind::sliding  ? "sliding_attention"
                          : k == AttentionKind::linear ? "linear_attention"
                                                       : "full_attention");
  j["layer_types"] = layer_types;
  j["attn_logit_softcapping"] = optional_json(c.attn_logit_softcapping);
  j["final_logit_softcapping"] = optional_json(c.final_logit_softcapping);
  j["query_pre_attn_scalar"] = c.query_pre_attn_scalar;
  j["clip_qkv"] = optional_json(c.clip_qkv);
  if (c.torch_dtype) j["torch_dtype"] = torch_dtype_name(*c.torch_dtype);
  j["bos_token_id"] = c.bos_token_id ? json(*c.bos_token_id) : json(nullptr);
  j["eos_token_id"] = c.eos_token_ids.empty()       ? json(nullptr)
                      : c.eos_token_ids.size() == 1 ? json(c.eos_token_ids[0])
                                                    : json(c.eos_token_ids);
  j["pad_token_id"] = c.pad_token_id ? json(*c.pad_token_id) : json(nullptr);

  const MoeConfig& m = c.moe;
  switch (fam->moe) {
    case MoeRule::dense: break;
    case MoeRule::mixtral: j["num_local_experts"] = m.num_experts; break;
    case MoeRule::qwen3_moe:
    case MoeRule::qwen2_moe:
      j["num_experts"] = m.num_experts;
      j["moe_intermediate_size"] = m.expert_intermediate_size;
      j["norm_topk_prob"] = m.norm_topk_prob;
      j["decoder_sparse_step"] = m.decoder_sparse_step;
      j["mlp_only_layers"] = m.mlp_only_layers;
      break;
    case MoeRule::olmoe:
      j["num_experts"] = m.num_experts;
      j["norm_topk_prob"] = m.norm_topk_prob;
      break;
    case MoeRule::gpt_oss:
      j["num_local_experts"] = m.num_experts;
      j["swiglu_alpha"] = c.swiglu_alpha;
      j["swiglu_limit"] = c.swiglu_limit;
      break;
  }
  if (fam->moe != MoeRule::dense) {
    j["num_experts_per_tok"] = m.num_experts_per_tok;
    if (m.shared_expert_intermediate_size > 0 || fam->moe == MoeRule::qwen2_moe)  // required there, even when 0
      j["shared_expert_intermediate_size"] = m.shared_expert_intermediate_size;
  }
  if (fam->hybrid_linear) {
    const LinearAttentionConfig& la = c.linear_attention;
    j["linear_num_key_heads"] = la.k_heads;
    j["linear_num_value_heads"] = la.v_heads;
    j["linear_key_head_dim"] = la.k_head_dim;
    j["linear_value_head_dim"] = la.v_head_dim;
    j["linear_conv_kernel_dim"] = la.conv_kernel;
  }
  if (const QuantizationConfig& q = c.quantization; !q.quant_method.empty()) {
    json qj = {{"quant_method", q.quant_method}};
    if (!q.weight_block_size.empty()) qj["weight_block_size"] = q.weight_block_size;
    if (!q.activation_scheme.empty()) qj["activation_scheme"] = q.activation_scheme;
    j["quantization_config"] = qj;
  }
  return j.dump(2);
}

}  // namespace fk
