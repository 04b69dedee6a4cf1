// What distinguishes the supported model families: their transformers defaults and the
// architectural traits that config.json does not spell out (implied by model_type).
#pragma once
#include <string_view>
#include <vector>

#include "models/llm/model_config.h"

namespace fk::model_config_detail {

enum class AttentionBiasRule : uint8_t {
  configurable,  // "attention_bias" sets q, k, v and o biases (llama, qwen3, gemma, olmoe)
  never,         // no biases, key ignored (mistral, mixtral)
  qkv_always,    // q, k, v biased, o not, key ignored (qwen2)
  qkv_key        // "qkv_bias" (default true) sets q, k, v biases, o never biased (qwen2_moe)
};

enum class SlidingRule : uint8_t {
  never,             // llama, gemma
  all_layers,        // every layer when sliding_window is set (mistral, mixtral)
  qwen,              // with use_sliding_window: layers >= max_window_layers (qwen2/3, qwen3_moe)
  gemma2_alternate,  // even layers sliding, odd layers full
  gemma3_pattern     // every sliding_window_pattern-th layer full, the others sliding
};

enum class MoeRule : uint8_t {
  dense,
  mixtral,    // num_local_experts; experts are intermediate_size wide; top-k renormalised
  qwen3_moe,  // num_experts, moe_intermediate_size, norm_topk_prob, decoder_sparse_step, mlp_only_layers
  qwen2_moe,  // qwen3_moe's fields plus shared_expert_intermediate_size (required)
  olmoe,      // num_experts; experts are intermediate_size wide; norm_topk_prob
  gpt_oss     // num_local_experts; experts are intermediate_size wide; softmax over the top-k
              // logits (= renormalised top-k); swiglu_alpha, swiglu_limit
};

struct Family {
  std::string_view model_type;
  // Defaults as config.json fields: what a config may leave out. Fields absent here and
  // from the config are required.
  std::string_view defaults_json;
  AttentionBiasRule attention_bias;
  bool reads_mlp_bias;
  QkNorm qk_norm;
  bool gemma;  // sqrt(hidden) embedding scale, (1 + w) norms, hidden_activation
  bool sandwich_norm;
  SlidingRule sliding;
  MoeRule moe;
  // qwen3_next: linear-attention layers (layer_types or full_attention_interval), the
  // linear_* shapes, gated attention output, (1 + w) norms without Gemma's embedding scale.
  bool hybrid_linear = false;
};

const std::vector<Family>& families();
const Family* find_family(std::string_view model_type);

}  // namespace fk::model_config_detail
