// Family defaults follow the transformers config classes of each model_type (the values a
// config.json may omit); the shape-defining fields (hidden_size, intermediate_size,
// num_hidden_layers, num_attention_heads, vocab_size, expert counts) are left out on
// purpose so that a config missing them is an error rather than a silently different
// model. gemma3_text is the exception: its released configs (nested under gemma3's
// "text_config") rely on the class defaults for heads, head_dim and vocabulary.
#include "models/llm/model_config_families.h"

namespace fk::model_config_detail {

const std::vector<Family>& families() {
  using A = AttentionBiasRule;
  using S = SlidingRule;
  using M = MoeRule;
  static const std::vector<Family> kFamilies = {
      {"llama",
       R"({"max_position_embeddings": 2048, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": false, "attention_bias": false, "mlp_bias": false})",
       A::configurable, true, QkNorm::none, false, false, S::never, M::dense},
      {"mistral",
       R"({"max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": false, "sliding_window": 4096})",
       A::never, false, QkNorm::none, false, false, S::all_layers, M::dense},
      {"qwen2",
       R"({"max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": false, "use_sliding_window": false, "sliding_window": 4096,
           "max_window_layers": 28})",
       A::qkv_always, false, QkNorm::none, false, false, S::qwen, M::dense},
      {"qwen3",
       R"({"max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": false, "attention_bias": false, "head_dim": 128, "use_sliding_window": false,
           "sliding_window": 4096, "max_window_layers": 28})",
       A::configurable, false, QkNorm::per_head, false, false, S::qwen, M::dense},
      {"gemma",
       R"({"max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
           "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true, "attention_bias": false,
           "head_dim": 256})",
       A::configurable, false, QkNorm::none, true, false, S::never, M::dense},
      {"gemma2",
       R"({"max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
           "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true, "attention_bias": false,
           "head_dim": 256, "query_pre_attn_scalar": 256, "sliding_window": 4096,
           "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0})",
       A::configurable, false, QkNorm::none, true, true, S::gemma2_alternate, M::dense},
      {"gemma3_text",
       R"({"vocab_size": 262208, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
           "max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
           "rope_local_base_freq": 10000.0, "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true,
           "attention_bias": false, "query_pre_attn_scalar": 256, "sliding_window": 4096,
           "sliding_window_pattern": 6, "final_logit_softcapping": null, "attn_logit_softcapping": null})",
       A::configurable, false, QkNorm::per_head, true, true, S::gemma3_pattern, M::dense},
      {"mixtral",
       R"({"max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 1000000.0, "hidden_act": "silu",
           "tie_word_embeddings": false, "sliding_window": null})",
       A::never, false, QkNorm::none, false, false, S::all_layers, M::mixtral},
      // Qwen3-VL's text model (the "text_config" of model_type qwen3_vl): Qwen3 with M-RoPE.
      {"qwen3_vl_text",
       R"({"max_position_embeddings": 128000, "rms_norm_eps": 1e-6, "rope_theta": 5000000.0, "hidden_act": "silu",
           "tie_word_embeddings": false, "attention_bias": false, "head_dim": 128})",
       A::configurable, false, QkNorm::per_head, false, false, S::never, M::dense},
      {"qwen3_moe",
       R"({"max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": false, "attention_bias": false, "use_sliding_window": false,
           "sliding_window": 4096, "max_window_layers": 28, "decoder_sparse_step": 1, "norm_topk_prob": false,
           "mlp_only_layers": []})",
       A::configurable, false, QkNorm::per_head, false, false, S::qwen, M::qwen3_moe},
      // Qwen1.5-MoE / Qwen2-MoE: Qwen2's attention (q/k/v biases unless "qkv_bias" says
      // otherwise, as Qwen2MoeConfig) and qwen3_moe's sparse layers plus a gated shared expert.
      {"qwen2_moe",
       R"({"max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": false, "qkv_bias": true, "use_sliding_window": false, "sliding_window": 4096,
           "max_window_layers": 28, "decoder_sparse_step": 1, "norm_topk_prob": false, "mlp_only_layers": []})",
       A::qkv_key, false, QkNorm::none, false, false, S::qwen, M::qwen2_moe},
      {"olmoe",
       R"({"max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": false, "attention_bias": false, "norm_topk_prob": false, "clip_qkv": null})",
       A::configurable, false, QkNorm::across_heads, false, false, S::never, M::olmoe},
      // Qwen3-Next: Qwen3NextConfig's defaults for what is not a shape (rope, partial rotary
      // 0.25, kernel 4, one full-attention layer in four); qwen2_moe's MoE fields (its
      // shared expert is sigmoid-gated too).
      {"qwen3_next",
       R"({"max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu",
           "tie_word_embeddings": false, "attention_bias": false, "head_dim": 256, "partial_rotary_factor": 0.25,
           "linear_conv_kernel_dim": 4, "full_attention_interval": 4, "decoder_sparse_step": 1,
           "norm_topk_prob": true, "mlp_only_layers": []})",
       A::configurable, false, QkNorm::per_head, false, false, S::never, M::qwen2_moe, true},
      // gpt-oss: GptOssConfig's defaults for what is not a shape: q/k/v/o biases, sliding
      // (even) and full (odd) layers with a 128-token window, YaRN x32 over a 4096-token
      // pretraining context (truncate false), the clamped SwiGLU's alpha and limit.
      {"gpt_oss",
       R"({"max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 150000.0, "hidden_act": "silu",
           "tie_word_embeddings": false, "attention_bias": true, "head_dim": 64, "sliding_window": 128,
           "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                            "truncate": false, "original_max_position_embeddings": 4096},
           "swiglu_alpha": 1.702, "swiglu_limit": 7.0})",
       A::configurable, false, QkNorm::none, false, false, S::gemma2_alternate, M::gpt_oss},
  };
  return kFamilies;
}

const Family* find_family(std::string_view model_type) {
  for (const Family& f : families())
    if (f.model_type == model_type) return &f;
  return nullptr;
}

}  // namespace fk::model_config_detail
