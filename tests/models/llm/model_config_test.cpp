#include "models/llm/model_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "fk/status.h"

namespace fk {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_model_config(text, "cfg.json");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), FK_ERR_INVALID_ARGUMENT);
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_CONFIG_ERROR(text, expected)                        \
  do {                                                             \
    const std::string msg = error_of(text);                        \
    EXPECT_NE(msg.find(expected), std::string::npos) << msg;       \
    EXPECT_NE(msg.find("cfg.json"), std::string::npos) << msg;     \
  } while (0)

int count_sliding(const ModelConfig& c) {
  return static_cast<int>(std::count(c.layer_types.begin(), c.layer_types.end(), AttentionKind::sliding));
}

// A small llama config whose fields the error tests replace one at a time.
std::string llama_with(const std::string& replace_key, const std::string& value) {
  std::vector<std::pair<std::string, std::string>> fields = {
      {"model_type", "\"llama\""},        {"hidden_size", "4096"},          {"intermediate_size", "14336"},
      {"num_hidden_layers", "32"},        {"num_attention_heads", "32"},    {"num_key_value_heads", "8"},
      {"vocab_size", "128256"},           {"max_position_embeddings", "8192"}, {"rms_norm_eps", "1e-05"},
      {"rope_theta", "500000.0"},         {"tie_word_embeddings", "false"}, {"torch_dtype", "\"bfloat16\""}};
  bool replaced = false;
  std::string out = "{";
  for (auto& [k, v] : fields) {
    if (k == replace_key) {
      replaced = true;
      if (value.empty()) continue;  // remove the field
      v = value;
    }
    out += (out.size() > 1 ? ", \"" : "\"") + k + "\": " + v;
  }
  if (!replaced && !value.empty()) out += ", \"" + replace_key + "\": " + value;
  return out + "}";
}

TEST(ModelConfig, Llama31_8B) {
  const ModelConfig c = model_config_by_name("Llama-3.1-8B");
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_EQ(c.architectures, std::vector<std::string>{"LlamaForCausalLM"});
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.intermediate_size, 14336);
  EXPECT_EQ(c.num_hidden_layers, 32);
  EXPECT_EQ(c.num_attention_heads, 32);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.q_size(), 4096);
  EXPECT_EQ(c.kv_size(), 1024);
  EXPECT_EQ(c.vocab_size, 128256);
  EXPECT_EQ(c.max_position_embeddings, 131072);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(c.rope_theta, 500000.0);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingKind::llama3);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.rope_scaling.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_EQ(c.rotary_dim(), 128);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(c.hidden_act, "silu");
  EXPECT_FALSE(c.attention_bias || c.mlp_bias);
  EXPECT_EQ(c.qk_norm, QkNorm::none);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(count_sliding(c), 0);
  EXPECT_EQ(c.layer_types.size(), 32u);
  EXPECT_EQ(c.torch_dtype, DType::bf16);
  EXPECT_EQ(c.bos_token_id, 128000);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{128001});
  EXPECT_FALSE(c.is_moe());
  EXPECT_FALSE(c.is_moe_layer(0));
  EXPECT_DOUBLE_EQ(c.attention_scale(), 1.0 / std::sqrt(128.0));
}

TEST(ModelConfig, Qwen3_8B) {
  const ModelConfig c = model_config_by_name("qwen3-8b");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.num_hidden_layers, 36);
  EXPECT_EQ(c.intermediate_size, 12288);
  EXPECT_EQ(c.qk_norm, QkNorm::per_head);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingKind::none);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_FALSE(c.attention_bias);
}

TEST(ModelConfig, Qwen2_5_7B) {
  // Qwen2 has q/k/v biases (not configurable), and a sliding window only with use_sliding_window.
  const ModelConfig c = parse_model_config(R"({
    "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02,
    "intermediate_size": 18944, "max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen2",
    "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 131072, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
    "transformers_version": "4.43.1", "use_cache": true, "use_sliding_window": false, "vocab_size": 152064})");
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_FALSE(c.attention_out_bias);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.qk_norm, QkNorm::none);
  // With use_sliding_window, layers from max_window_layers on slide.
  const ModelConfig s = parse_model_config(R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 10, "use_sliding_window": true,
    "sliding_window": 16, "max_window_layers": 2})");
  EXPECT_EQ(s.sliding_window, 16);
  EXPECT_EQ(s.layer_types, (std::vector<AttentionKind>{AttentionKind::full, AttentionKind::full,
                                                       AttentionKind::sliding, AttentionKind::sliding}));
}

TEST(ModelConfig, Mistral7Bv03AndSlidingWindow) {
  const ModelConfig c = model_config_by_name("mistral-7b-v0.3");
  EXPECT_EQ(c.vocab_size, 32768);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.sliding_window, 0);  // "sliding_window": null
  EXPECT_FALSE(c.attention_bias);
  // Mistral-7B-v0.1 slides on every layer.
  const ModelConfig v01 = parse_model_config(R"({
    "architectures": ["MistralForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
    "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 32768,
    "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096, "tie_word_embeddings": false,
    "torch_dtype": "bfloat16", "transformers_version": "4.34.0.dev0", "use_cache": true, "vocab_size": 32000})");
  EXPECT_EQ(v01.sliding_window, 4096);
  EXPECT_EQ(count_sliding(v01), 32);
  // Left out, the window takes MistralConfig's default.
  EXPECT_EQ(parse_model_config(llama_with("model_type", "\"mistral\"")).sliding_window, 4096);
}

TEST(ModelConfig, Gemma7B) {
  const ModelConfig c = parse_model_config(R"({
    "architectures": ["GemmaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 2,
    "eos_token_id": 1, "head_dim": 256, "hidden_act": "gelu", "hidden_size": 3072, "initializer_range": 0.02,
    "intermediate_size": 24576, "max_position_embeddings": 8192, "model_type": "gemma",
    "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 16, "pad_token_id": 0,
    "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 10000.0, "torch_dtype": "bfloat16",
    "transformers_version": "4.38.0.dev0", "use_cache": true, "vocab_size": 256000})");
  EXPECT_EQ(c.hidden_act, "gelu_pytorch_tanh");  // Gemma's trained activation, whatever hidden_act says
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.q_size(), 4096);  // != hidden_size
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_TRUE(c.embedding_scale);
  EXPECT_TRUE(c.norm_weight_offset);
  EXPECT_FALSE(c.sandwich_norm);
  EXPECT_EQ(c.pad_token_id, 0);
}

TEST(ModelConfig, Gemma2_9B) {
  const ModelConfig c = model_config_by_name("gemma-2-9b");
  EXPECT_EQ(c.num_hidden_layers, 42);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_DOUBLE_EQ(c.query_pre_attn_scalar, 256);
  EXPECT_DOUBLE_EQ(c.attn_logit_softcapping, 50);
  EXPECT_DOUBLE_EQ(c.final_logit_softcapping, 30);
  EXPECT_EQ(c.sliding_window, 4096);
  EXPECT_EQ(c.layer_types[0], AttentionKind::sliding);
  EXPECT_EQ(c.layer_types[1], AttentionKind::full);
  EXPECT_EQ(count_sliding(c), 21);
  EXPECT_TRUE(c.sandwich_norm);
  EXPECT_EQ(c.torch_dtype, DType::f32);
  EXPECT_EQ(c.hidden_act, "gelu_pytorch_tanh");
}

TEST(ModelConfig, Gemma3NestedTextConfig) {
  // gemma-3-4b-it: the text model relies on Gemma3TextConfig's defaults for heads and vocabulary.
  const ModelConfig c = parse_model_config(R"({
    "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999, "eoi_token_index": 256000,
    "eos_token_id": [1, 106], "image_token_index": 262144, "initializer_range": 0.02, "mm_tokens_per_image": 256,
    "model_type": "gemma3",
    "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                    "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                    "sliding_window": 1024},
    "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0",
    "vision_config": {"hidden_size": 1152, "image_size": 896, "intermediate_size": 4304,
                      "model_type": "siglip_vision_model", "num_attention_heads": 16, "num_hidden_layers": 27,
                      "patch_size": 14, "vision_use_head": false}})");
  EXPECT_EQ(c.model_type, "gemma3_text");
  EXPECT_EQ(c.architectures, std::vector<std::string>{"Gemma3ForConditionalGeneration"});
  EXPECT_EQ(c.num_attention_heads, 8);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 256);
  EXPECT_EQ(c.vocab_size, 262208);
  EXPECT_EQ(c.sliding_window, 1024);
  EXPECT_EQ(c.qk_norm, QkNorm::per_head);
  EXPECT_EQ(c.rope_scaling.type, RopeScalingKind::linear);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 8.0);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(c.rope_local_base_freq, 1e4);
  EXPECT_EQ(c.torch_dtype, DType::bf16);
  EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{1, 106}));
  EXPECT_DOUBLE_EQ(c.final_logit_softcapping, 0);
  // Pattern 6: every sixth layer is global.
  for (int i = 0; i < 34; ++i)
    EXPECT_EQ(c.layer_types[static_cast<size_t>(i)], (i + 1) % 6 == 0 ? AttentionKind::full : AttentionKind::sliding) << i;
  // Flat gemma3_text, with an explicit layer_types list winning over the pattern.
  const ModelConfig flat = parse_model_config(R"({"model_type": "gemma3_text", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "sliding_window": 8,
    "layer_types": ["full_attention", "sliding_attention"]})");
  EXPECT_EQ(flat.layer_types, (std::vector<AttentionKind>{AttentionKind::full, AttentionKind::sliding}));
}

TEST(ModelConfig, Qwen3_30B_A3B) {
  const ModelConfig c = model_config_by_name("qwen3-30b-a3b");
  EXPECT_TRUE(c.is_moe());
  EXPECT_EQ(c.moe.num_experts, 128);
  EXPECT_EQ(c.moe.num_experts_per_tok, 8);
  EXPECT_EQ(c.moe.expert_intermediate_size, 768);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 0);
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.qk_norm, QkNorm::per_head);
  for (int i = 0; i < 48; ++i) EXPECT_TRUE(c.is_moe_layer(i));
  const ModelConfig sparse = parse_model_config(R"({"model_type": "qwen3_moe", "hidden_size": 64,
    "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 4, "num_attention_heads": 4,
    "head_dim": 16, "vocab_size": 10, "num_experts": 4, "num_experts_per_tok": 2, "decoder_sparse_step": 2,
    "mlp_only_layers": [3], "shared_expert_intermediate_size": 64})");
  EXPECT_FALSE(sparse.is_moe_layer(0));
  EXPECT_TRUE(sparse.is_moe_layer(1));
  EXPECT_FALSE(sparse.is_moe_layer(2));
  EXPECT_FALSE(sparse.is_moe_layer(3));  // mlp_only
  EXPECT_EQ(sparse.moe.shared_expert_intermediate_size, 64);
  EXPECT_FALSE(sparse.moe.norm_topk_prob);  // Qwen3MoeConfig's default
}

TEST(ModelConfig, Qwen15MoeA27B) {
  const ModelConfig c = model_config_by_name("qwen1.5-moe-a2.7b");
  EXPECT_EQ(c.model_type, "qwen2_moe");
  EXPECT_EQ(c.hidden_size, 2048);
  EXPECT_EQ(c.num_hidden_layers, 24);
  EXPECT_EQ(c.num_attention_heads, 16);
  EXPECT_EQ(c.num_key_value_heads, 16);
  EXPECT_EQ(c.head_dim, 128);  // hidden / heads: Qwen2MoeConfig has no head_dim
  EXPECT_EQ(c.vocab_size, 151936);
  EXPECT_TRUE(c.attention_bias);  // q, k, v (qkv_bias defaults to true)
  EXPECT_FALSE(c.attention_out_bias);
  EXPECT_EQ(c.qk_norm, QkNorm::none);
  EXPECT_EQ(c.sliding_window, 0);  // use_sliding_window false
  EXPECT_EQ(c.moe.num_experts, 60);
  EXPECT_EQ(c.moe.num_experts_per_tok, 4);
  EXPECT_EQ(c.moe.expert_intermediate_size, 1408);
  EXPECT_EQ(c.moe.shared_expert_intermediate_size, 5632);
  EXPECT_FALSE(c.moe.norm_topk_prob);
  for (int i = 0; i < 24; ++i) EXPECT_TRUE(c.is_moe_layer(i));

  // Qwen2MoeConfig's defaults; qkv_bias switches the q/k/v biases (attention_bias is not its
  // key); decoder_sparse_step and mlp_only_layers as for qwen3_moe.
  const std::string base = R"({"model_type": "qwen2_moe", "hidden_size": 64, "moe_intermediate_size": 32,
    "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 10, "num_experts": 4, "num_experts_per_tok": 2, )";
  const ModelConfig d = parse_model_config(base + R"("shared_expert_intermediate_size": 48})", "cfg.json");
  EXPECT_TRUE(d.attention_bias);
  EXPECT_FALSE(d.attention_out_bias);
  EXPECT_FALSE(d.moe.norm_topk_prob);
  EXPECT_EQ(d.intermediate_size, 0);  // no dense layer, no dense width needed
  EXPECT_EQ(d.head_dim, 16);
  EXPECT_EQ(d.max_position_embeddings, 32768);
  const ModelConfig sparse = parse_model_config(base + R"("shared_expert_intermediate_size": 48, "qkv_bias": false,
    "attention_bias": true, "intermediate_size": 128, "decoder_sparse_step": 2, "mlp_only_layers": [3]})", "cfg.json");
  EXPECT_FALSE(sparse.attention_bias);
  EXPECT_FALSE(sparse.attention_out_bias);
  EXPECT_FALSE(sparse.is_moe_layer(0));
  EXPECT_TRUE(sparse.is_moe_layer(1));
  EXPECT_FALSE(sparse.is_moe_layer(2));
  EXPECT_FALSE(sparse.is_moe_layer(3));  // mlp_only
  EXPECT_EQ(parse_model_config(model_config_to_json(sparse)), sparse);
  // The shared expert's width defines the model: required, and never negative.
  EXPECT_CONFIG_ERROR(base + R"("norm_topk_prob": true})", "missing required field 'shared_expert_intermediate_size' (qwen2_moe)");
  EXPECT_CONFIG_ERROR(base + R"("shared_expert_intermediate_size": -1})", "'shared_expert_intermediate_size' must be >= 0");
  EXPECT_CONFIG_ERROR(base + R"("shared_expert_intermediate_size": 48, "mlp_only_layers": [0]})",
                      "'intermediate_size' is not given");
}

TEST(ModelConfig, Mixtral8x7B) {
  const ModelConfig c = model_config_by_name("mixtral-8x7b");
  EXPECT_EQ(c.moe.num_experts, 8);
  EXPECT_EQ(c.moe.num_experts_per_tok, 2);
  EXPECT_EQ(c.moe.expert_intermediate_size, 14336);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_TRUE(c.is_moe_layer(31));
}

TEST(ModelConfig, Olmoe1B7B) {
  const ModelConfig c = model_config_by_name("olmoe-1b-7b");
  EXPECT_EQ(c.moe.num_experts, 64);
  EXPECT_EQ(c.moe.num_experts_per_tok, 8);
  EXPECT_EQ(c.moe.expert_intermediate_size, 1024);
  EXPECT_FALSE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.qk_norm, QkNorm::across_heads);
  EXPECT_EQ(c.num_key_value_heads, 16);
  EXPECT_FALSE(c.bos_token_id.has_value());
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{50279});
  EXPECT_EQ(c.pad_token_id, 1);
  EXPECT_DOUBLE_EQ(c.clip_qkv, 0);
}

TEST(ModelConfig, RopeScalingKinds) {
  auto rope = [](const std::string& scaling) { return parse_model_config(llama_with("rope_scaling", scaling)).rope_scaling; };
  EXPECT_EQ(rope("null").type, RopeScalingKind::none);
  EXPECT_EQ(rope(R"({"rope_type": "default"})").type, RopeScalingKind::none);
  const RopeScaling lin = rope(R"({"type": "linear", "factor": 2.0})");  // the older key
  EXPECT_EQ(lin.type, RopeScalingKind::linear);
  EXPECT_DOUBLE_EQ(lin.factor, 2.0);
  const RopeScaling dyn = rope(R"({"type": "dynamic", "factor": 4})");
  EXPECT_EQ(dyn.type, RopeScalingKind::dynamic);
  EXPECT_EQ(dyn.original_max_position_embeddings, 8192);  // defaults to max_position_embeddings
  const RopeScaling yarn = rope(R"({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})");
  EXPECT_EQ(yarn.type, RopeScalingKind::yarn);
  EXPECT_DOUBLE_EQ(yarn.beta_fast, 32);
  EXPECT_DOUBLE_EQ(yarn.beta_slow, 1);
  EXPECT_DOUBLE_EQ(yarn.mscale, 1);
  EXPECT_DOUBLE_EQ(yarn.mscale_all_dim, 0);
  EXPECT_EQ(yarn.original_max_position_embeddings, 32768);
  const RopeScaling yarn2 = rope(R"({"rope_type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1,
                                     "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096})");
  EXPECT_DOUBLE_EQ(yarn2.mscale_all_dim, 1.0);
  EXPECT_DOUBLE_EQ(yarn2.factor, 40);
  // The newer single "rope_parameters" object.
  const ModelConfig v5 = parse_model_config(llama_with("rope_theta", "") .insert(1, R"("rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 250000.0}, )"));
  EXPECT_DOUBLE_EQ(v5.rope_theta, 250000.0);
  EXPECT_EQ(v5.rope_scaling.type, RopeScalingKind::linear);
  // Per layer type (Gemma 3 as transformers 5 writes it): the sliding layers' theta.
  const std::string gemma3 = R"({"model_type": "gemma3_text", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64, "vocab_size": 256,
    "max_position_embeddings": 512, "sliding_window": 16, "layer_types": ["sliding_attention", "full_attention"],
    "rope_parameters": {"full_attention": {"factor": 8.0, "rope_theta": 1000000.0, "rope_type": "linear"},
                        "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"}}})";
  const ModelConfig g3 = parse_model_config(gemma3);
  EXPECT_EQ(g3.rope_theta, 1000000.0);
  EXPECT_EQ(g3.rope_scaling.type, RopeScalingKind::linear);
  EXPECT_EQ(g3.rope_scaling.factor, 8.0);
  EXPECT_EQ(g3.rope_local_base_freq, 10000.0);
}

TEST(ModelConfig, PartialRotaryAndDefaults) {
  const ModelConfig c = parse_model_config(llama_with("partial_rotary_factor", "0.5"));
  EXPECT_EQ(c.rotary_dim(), 64);
  // Left-out fields take LlamaConfig's defaults; kv heads default to the query heads.
  const ModelConfig d = parse_model_config(R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100})");
  EXPECT_EQ(d.num_key_value_heads, 4);
  EXPECT_EQ(d.head_dim, 64);
  EXPECT_EQ(d.max_position_embeddings, 2048);
  EXPECT_DOUBLE_EQ(d.rms_norm_eps, 1e-6);
  EXPECT_DOUBLE_EQ(d.rope_theta, 10000);
  EXPECT_FALSE(d.torch_dtype.has_value());
  EXPECT_TRUE(d.eos_token_ids.empty());
  EXPECT_EQ(parse_model_config(llama_with("dtype", "\"float16\"")).torch_dtype, DType::f16);  // newer key
  EXPECT_EQ(parse_model_config(llama_with("attention_bias", "true")).attention_out_bias, true);
}

TEST(ModelConfig, Errors) {
  EXPECT_CONFIG_ERROR("[1]", "config must be a JSON object");
  EXPECT_CONFIG_ERROR("{", "not valid JSON");
  EXPECT_CONFIG_ERROR(R"({"model_type": "llama", "model_type": "qwen2"})", "more than once");
  EXPECT_CONFIG_ERROR(llama_with("model_type", ""), "missing 'model_type'");
  EXPECT_CONFIG_ERROR(llama_with("model_type", "\"phi3\""), "unsupported model_type 'phi3' (supported: llama, mistral");
  EXPECT_CONFIG_ERROR(llama_with("hidden_size", ""), "missing required field 'hidden_size' (llama)");
  EXPECT_CONFIG_ERROR(llama_with("vocab_size", ""), "missing required field 'vocab_size'");
  EXPECT_CONFIG_ERROR(llama_with("intermediate_size", ""), "missing required field 'intermediate_size'");
  EXPECT_CONFIG_ERROR(llama_with("hidden_size", "\"4096\""), "'hidden_size' must be an integer, got string");
  EXPECT_CONFIG_ERROR(llama_with("num_hidden_layers", "32.0"), "'num_hidden_layers' must be an integer, got floating-point");
  EXPECT_CONFIG_ERROR(llama_with("hidden_size", "null"), "'hidden_size' is null but required");
  EXPECT_CONFIG_ERROR(llama_with("hidden_size", "4095"), "'hidden_size' (4095) is not divisible by 'num_attention_heads' (32)");
  EXPECT_CONFIG_ERROR(llama_with("num_key_value_heads", "5"), "is not a multiple of 'num_key_value_heads' (5)");
  EXPECT_CONFIG_ERROR(llama_with("num_key_value_heads", "0"), "'num_key_value_heads' must be positive");
  EXPECT_CONFIG_ERROR(llama_with("intermediate_size", "-1"), "'intermediate_size' must be positive, got -1");
  EXPECT_CONFIG_ERROR(llama_with("num_hidden_layers", "0"), "'num_hidden_layers' must be positive");
  EXPECT_CONFIG_ERROR(llama_with("head_dim", "0"), "'head_dim' must be positive");
  EXPECT_CONFIG_ERROR(llama_with("rms_norm_eps", "\"1e-5\""), "'rms_norm_eps' must be a number");
  EXPECT_CONFIG_ERROR(llama_with("rope_theta", "-1"), "'rope_theta' must be positive");
  EXPECT_CONFIG_ERROR(llama_with("tie_word_embeddings", "\"yes\""), "must be true or false");
  EXPECT_CONFIG_ERROR(llama_with("hidden_act", "\"swiglu\""), "unsupported activation 'swiglu'");
  EXPECT_CONFIG_ERROR(llama_with("torch_dtype", "\"complex64\""), "unknown torch_dtype 'complex64'");
  EXPECT_CONFIG_ERROR(llama_with("eos_token_id", "[\"a\"]"), "'eos_token_id' must be an integer or a list");
  EXPECT_CONFIG_ERROR(llama_with("partial_rotary_factor", "1.5"), "'partial_rotary_factor' must be in (0, 1]");
  EXPECT_CONFIG_ERROR(llama_with("partial_rotary_factor", "0.3"), "even whole number");
  EXPECT_CONFIG_ERROR(llama_with("rope_scaling", R"({"rope_type": "longrope", "factor": 4})"),
                      "unsupported rope scaling type 'longrope' (supported: default, linear, dynamic, llama3, yarn)");
  EXPECT_CONFIG_ERROR(llama_with("rope_scaling", R"({"factor": 4})"), "neither 'rope_type' nor 'type'");
  EXPECT_CONFIG_ERROR(llama_with("rope_scaling", R"({"rope_type": "linear", "type": "dynamic", "factor": 4})"), "disagree");
  EXPECT_CONFIG_ERROR(llama_with("rope_scaling", R"({"rope_type": "linear"})"), "rope_scaling: missing required field 'factor'");
  EXPECT_CONFIG_ERROR(llama_with("rope_scaling", R"({"rope_type": "llama3", "factor": 8.0, "high_freq_factor": 4.0,
                                                    "original_max_position_embeddings": 8192})"),
                      "missing required field 'low_freq_factor'");
  EXPECT_CONFIG_ERROR(llama_with("rope_scaling", R"({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,
                                                    "high_freq_factor": 1.0, "original_max_position_embeddings": 8192})"),
                      "must exceed 'low_freq_factor'");
  EXPECT_CONFIG_ERROR(llama_with("rope_scaling", R"({"rope_type": "linear", "factor": 0})"), "'factor' must be positive");
  EXPECT_CONFIG_ERROR(llama_with("rope_scaling", "[8]"), "'rope_scaling' must be an object");
  EXPECT_CONFIG_ERROR(llama_with("layer_types", R"(["full_attention"])"), "'layer_types' has 1 entries but 'num_hidden_layers' is 32");
  EXPECT_CONFIG_ERROR(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
                          "num_attention_heads": 4, "vocab_size": 10, "layer_types": ["sliding_attention"]})",
                      "'sliding_window' is not set");
  EXPECT_CONFIG_ERROR(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
                          "num_attention_heads": 4, "vocab_size": 10, "layer_types": ["local"]})",
                      "expected \"full_attention\" or \"sliding_attention\"");
  const std::string moe = R"({"model_type": "mixtral", "hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10, )";
  EXPECT_CONFIG_ERROR(moe + R"("num_experts_per_tok": 2})", "missing required field 'num_local_experts' (mixtral)");
  EXPECT_CONFIG_ERROR(moe + R"("num_local_experts": 4, "num_experts_per_tok": 5})", "'num_experts_per_tok' (5) exceeds");
  EXPECT_CONFIG_ERROR(moe + R"("num_local_experts": 0, "num_experts_per_tok": 1})", "'num_local_experts' must be positive");
  // transformers maps num_experts and num_local_experts onto each other: either key works.
  EXPECT_EQ(parse_model_config(moe + R"("num_experts": 4, "num_experts_per_tok": 2})").moe.num_experts, 4);
  EXPECT_CONFIG_ERROR(moe + R"("num_experts": 4, "num_local_experts": 8, "num_experts_per_tok": 2})", "disagree");
  const std::string qmoe = R"({"model_type": "qwen3_moe", "hidden_size": 64, "moe_intermediate_size": 32,
    "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 16, "vocab_size": 10, "num_experts": 4,
    "num_experts_per_tok": 2, )";
  EXPECT_NO_THROW(parse_model_config(qmoe + R"("norm_topk_prob": true})"));  // no dense layer, no dense width
  EXPECT_EQ(parse_model_config(R"({"model_type": "qwen3_moe", "hidden_size": 64, "moe_intermediate_size": 32,
    "num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 16, "vocab_size": 10, "num_local_experts": 6,
    "num_experts_per_tok": 2})").moe.num_experts, 6);
  EXPECT_CONFIG_ERROR(qmoe + R"("mlp_only_layers": [2]})", "'mlp_only_layers' entry 2 is not a layer index");
  EXPECT_CONFIG_ERROR(qmoe + R"("mlp_only_layers": [1]})", "'intermediate_size' is not given");
  EXPECT_CONFIG_ERROR(qmoe + R"("decoder_sparse_step": 0})", "'decoder_sparse_step' must be positive");
  EXPECT_CONFIG_ERROR(R"({"model_type": "gemma3", "architectures": ["Gemma3ForConditionalGeneration"]})",
                      "needs a 'text_config' object");
  EXPECT_CONFIG_ERROR(R"({"model_type": "gemma3", "text_config": {"model_type": "llama"}})", "expected \"gemma3_text\"");
  EXPECT_CONFIG_ERROR(R"({"model_type": "gemma3", "text_config": {"hidden_size": 64}})", "text_config: missing required field");
}

TEST(ModelConfig, BuiltinsRoundTripThroughJson) {
  const auto names = model_config_names();
  EXPECT_GE(names.size(), 17u);
  for (const std::string& name : names) {
    const ModelConfig c = model_config_by_name(name);
    const std::string text = model_config_to_json(c);
    EXPECT_EQ(parse_model_config(text, name), c) << name << "\n" << text;
    EXPECT_EQ(c.layer_types.size(), static_cast<size_t>(c.num_hidden_layers)) << name;
    // tiny-qwen3-vl keeps the width of its vision goldens (a text model of 24).
    if (name.rfind("tiny-", 0) == 0 && c.model_type != "qwen3_vl_text") {
      EXPECT_EQ(c.hidden_size, 64) << name;
      // A hybrid's tiny model keeps its layer pattern: 3 linear-attention layers per full one.
      EXPECT_EQ(c.num_hidden_layers, c.has_linear_attention() ? 4 : 2) << name;
    }
  }
  EXPECT_TRUE(model_config_by_name("tiny-mistral").sliding_window > 0);
  EXPECT_EQ(model_config_by_name("tiny-gemma3").layer_types,
            (std::vector<AttentionKind>{AttentionKind::sliding, AttentionKind::full}));
  EXPECT_TRUE(model_config_by_name("tiny-qwen3-moe").is_moe());
  EXPECT_EQ(model_config_by_name("tiny-qwen2").attention_bias, true);
  try {
    model_config_by_name("llama-9000");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("known: llama-3.1-8b"), std::string::npos) << e.what();
  }
}

// quantization_config is recorded as given (Qwen3-30B-A3B-FP8's; "fmt" is not read), for
// the engine to accept or refuse (model_spec_for), and written back by model_config_to_json.
TEST(ModelConfig, QuantizationConfig) {
  const std::string fp8 = R"({"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                              "weight_block_size": [128, 128]})";
  const ModelConfig c = parse_model_config(llama_with("quantization_config", fp8), "cfg.json");
  EXPECT_EQ(c.quantization.quant_method, "fp8");
  EXPECT_EQ(c.quantization.weight_block_size, (std::vector<int64_t>{128, 128}));
  EXPECT_EQ(c.quantization.activation_scheme, "dynamic");
  EXPECT_EQ(parse_model_config(model_config_to_json(c)), c);
  EXPECT_NE(model_config_to_json(c).find("quantization_config"), std::string::npos);
  EXPECT_TRUE(parse_model_config(llama_with("torch_dtype", "\"bfloat16\"")).quantization.quant_method.empty());
  EXPECT_TRUE(parse_model_config(llama_with("quantization_config", "null")).quantization.quant_method.empty());
  // Other methods parse (the engine refuses them, naming the method).
  EXPECT_EQ(parse_model_config(llama_with("quantization_config", R"({"quant_method": "gptq", "bits": 4})"))
                .quantization.quant_method,
            "gptq");
  EXPECT_CONFIG_ERROR(llama_with("quantization_config", R"({"bits": 4})"), "quantization_config: missing required "
                                                                            "field 'quant_method'");
  EXPECT_CONFIG_ERROR(llama_with("quantization_config", R"({"quant_method": "fp8", "weight_block_size": [128, 0]})"),
                      "'weight_block_size' must be a list of positive integers");
  EXPECT_CONFIG_ERROR(llama_with("quantization_config", "\"fp8\""), "'quantization_config' must be an object");
}

TEST(ModelConfig, LoadsFromDirectory) {
  const auto dir = std::filesystem::temp_directory_path() / "fk_model_config_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << model_config_json_by_name("tiny-llama");
  EXPECT_EQ(load_model_config(dir), model_config_by_name("tiny-llama"));
  EXPECT_EQ(load_model_config(dir / "config.json").model_type, "llama");
  std::filesystem::remove_all(dir);
  EXPECT_THROW(load_model_config(dir), Error);
}

}  // namespace
}  // namespace fk
