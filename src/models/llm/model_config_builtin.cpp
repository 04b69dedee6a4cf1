// Built-in configs: the published config.json of released models whose shapes the
// benchmark uses, and tiny models of every family (hidden 64, 2 layers) for tests and the
// CPU engine. Stored as config.json text and parsed like any other config.
#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "models/llm/model_config.h"
#include "models/vlm/qwen3_vl/presets.h"
#include "fk/status.h"

namespace fk {

namespace {

const std::vector<std::pair<std::string_view, std::string_view>>& builtins() {
  static const std::vector<std::pair<std::string_view, std::string_view>> kBuiltins = {
      {"llama-3.1-8b", R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "hidden_act": "silu", "hidden_size": 4096,
  "initializer_range": 0.02, "intermediate_size": 14336, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true,
  "vocab_size": 128256})"},
      {"qwen3-8b", R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096,
  "initializer_range": 0.02, "intermediate_size": 12288, "max_position_embeddings": 40960,
  "max_window_layers": 36, "model_type": "qwen3", "num_attention_heads": 32, "num_hidden_layers": 36,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936})"},
      {"mistral-7b-v0.3", R"({
  "architectures": ["MistralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mistral", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 32768})"},
      {"gemma-2-9b", R"({
  "architectures": ["Gemma2ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": 50.0, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": 1,
  "final_logit_softcapping": 30.0, "head_dim": 256, "hidden_act": "gelu_pytorch_tanh",
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 3584, "initializer_range": 0.02,
  "intermediate_size": 14336, "max_position_embeddings": 8192, "model_type": "gemma2",
  "num_attention_heads": 16, "num_hidden_layers": 42, "num_key_value_heads": 8, "pad_token_id": 0,
  "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_theta": 10000.0, "sliding_window": 4096,
  "sliding_window_size": 4096, "torch_dtype": "float32", "use_cache": true, "vocab_size": 256000})"},
      {"qwen3-30b-a3b", R"({
  "architectures": ["Qwen3MoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "head_dim": 128,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144,
  "max_position_embeddings": 40960, "max_window_layers": 48, "mlp_only_layers": [], "model_type": "qwen3_moe",
  "moe_intermediate_size": 768, "norm_topk_prob": true, "num_attention_heads": 32, "num_experts": 128,
  "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4, "output_router_logits": false,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936})"},
      {"mixtral-8x7b", R"({
  "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2,
  "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 32768, "model_type": "mixtral", "num_attention_heads": 32,
  "num_experts_per_tok": 2, "num_hidden_layers": 32, "num_key_value_heads": 8, "num_local_experts": 8,
  "output_router_logits": false, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.02, "sliding_window": null, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 32000})"},
      {"olmoe-1b-7b", R"({
  "architectures": ["OlmoeForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": null, "clip_qkv": null, "eos_token_id": 50279, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 1024, "max_position_embeddings": 4096,
  "model_type": "olmoe", "norm_topk_prob": false, "num_attention_heads": 16, "num_experts": 64,
  "num_experts_per_tok": 8, "num_hidden_layers": 16, "num_key_value_heads": 16,
  "output_router_logits": false, "pad_token_id": 1, "rms_norm_eps": 1e-05, "rope_scaling": null,
  "rope_theta": 10000.0, "router_aux_loss_coef": 0.01, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 50304})"},
      {"qwen1.5-moe-a2.7b", R"({
  "architectures": ["Qwen2MoeForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "decoder_sparse_step": 1, "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 2048,
  "initializer_range": 0.02, "intermediate_size": 5632, "max_position_embeddings": 8192, "max_window_layers": 21,
  "model_type": "qwen2_moe", "moe_intermediate_size": 1408, "norm_topk_prob": false, "num_attention_heads": 16,
  "num_experts": 60, "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 16,
  "output_router_logits": false, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
  "shared_expert_intermediate_size": 5632, "sliding_window": 32768, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})"},
      {"qwen3-next-80b-a3b", R"({
  "architectures": ["Qwen3NextForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "full_attention_interval": 4,
  "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
  "intermediate_size": 5120, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
  "linear_num_value_heads": 32, "linear_value_head_dim": 128, "max_position_embeddings": 262144,
  "mlp_only_layers": [], "model_type": "qwen3_next", "moe_intermediate_size": 512, "norm_topk_prob": true,
  "num_attention_heads": 16, "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 48,
  "num_key_value_heads": 2, "output_router_logits": false, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 10000000, "router_aux_loss_coef": 0.001,
  "shared_expert_intermediate_size": 512, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})"},
      // Qwen3-Next-80B-A3B's width with 12 of its 48 layers (9 gated DeltaNet, 3 gated
      // attention; about 20B parameters): what one 80 GB GPU holds in bf16 for benchmarks.
      {"qwen3-next-80b-a3b-12l", R"({
  "architectures": ["Qwen3NextForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "decoder_sparse_step": 1, "eos_token_id": 151645, "full_attention_interval": 4,
  "head_dim": 256, "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
  "intermediate_size": 5120, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_num_key_heads": 16,
  "linear_num_value_heads": 32, "linear_value_head_dim": 128, "max_position_embeddings": 262144,
  "mlp_only_layers": [], "model_type": "qwen3_next", "moe_intermediate_size": 512, "norm_topk_prob": true,
  "num_attention_heads": 16, "num_experts": 512, "num_experts_per_tok": 10, "num_hidden_layers": 12,
  "num_key_value_heads": 2, "output_router_logits": false, "partial_rotary_factor": 0.25, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 10000000, "router_aux_loss_coef": 0.001,
  "shared_expert_intermediate_size": 512, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "use_cache": true, "use_sliding_window": false, "vocab_size": 151936})"},
      // gpt-oss-120b and gpt-oss-20b: the published config.json without its quantization_config
      // (the released experts are MXFP4, dequantized to bf16 at load; these presets run dummy
      // bf16 weights). 120b in bf16 is about 234 GB.
      {"gpt-oss-120b", R"({
  "architectures": ["GptOssForCausalLM"], "attention_bias": true, "attention_dropout": 0.0,
  "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
  "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": 2880,
  "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], "max_position_embeddings": 131072, "model_type": "gpt_oss",
  "num_attention_heads": 64, "num_experts_per_tok": 4, "num_hidden_layers": 36, "num_key_value_heads": 8,
  "num_local_experts": 128, "output_router_logits": false, "pad_token_id": 199999, "rms_norm_eps": 1e-05,
  "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                   "rope_type": "yarn", "truncate": false},
  "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 201088})"},
      {"gpt-oss-20b", R"({
  "architectures": ["GptOssForCausalLM"], "attention_bias": true, "attention_dropout": 0.0,
  "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
  "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": 2880,
  "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], "max_position_embeddings": 131072, "model_type": "gpt_oss",
  "num_attention_heads": 64, "num_experts_per_tok": 4, "num_hidden_layers": 24, "num_key_value_heads": 8,
  "num_local_experts": 32, "output_router_logits": false, "pad_token_id": 199999, "rms_norm_eps": 1e-05,
  "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                   "rope_type": "yarn", "truncate": false},
  "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 201088})"},
      // gpt-oss-120b's width with 8 of its 36 layers (4 sliding, 4 full; about 53 GB in bf16,
      // 6.4 GB of experts a layer): what one 80 GB GPU holds with room for the KV cache.
      {"gpt-oss-120b-8l", R"({
  "architectures": ["GptOssForCausalLM"], "attention_bias": true, "attention_dropout": 0.0,
  "eos_token_id": 200002, "experts_per_token": 4, "head_dim": 64, "hidden_act": "silu", "hidden_size": 2880,
  "initial_context_length": 4096, "initializer_range": 0.02, "intermediate_size": 2880,
  "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention", "sliding_attention", "full_attention"], "max_position_embeddings": 131072, "model_type": "gpt_oss",
  "num_attention_heads": 64, "num_experts_per_tok": 4, "num_hidden_layers": 8, "num_key_value_heads": 8,
  "num_local_experts": 128, "output_router_logits": false, "pad_token_id": 199999, "rms_norm_eps": 1e-05,
  "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0, "original_max_position_embeddings": 4096,
                   "rope_type": "yarn", "truncate": false},
  "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 128, "swiglu_limit": 7.0,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 201088})"},
      {"qwen2.5-7b", R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
  "hidden_act": "silu", "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 18944,
  "max_position_embeddings": 32768, "max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 28,
  "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "sliding_window": 131072, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 152064})"},
      {"gemma-7b", R"({
  "architectures": ["GemmaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 2,
  "eos_token_id": 1, "head_dim": 256, "hidden_act": "gelu", "hidden_size": 3072, "initializer_range": 0.02,
  "intermediate_size": 24576, "max_position_embeddings": 8192, "model_type": "gemma", "num_attention_heads": 16,
  "num_hidden_layers": 28, "num_key_value_heads": 16, "pad_token_id": 0, "rms_norm_eps": 1e-06,
  "rope_scaling": null, "rope_theta": 10000.0, "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 256000})"},
      {"gemma-3-1b", R"({
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid", "eos_token_id": [1, 106],
  "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152,
  "initializer_range": 0.02, "intermediate_size": 6912, "max_position_embeddings": 32768,
  "model_type": "gemma3_text", "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
  "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
  "rope_scaling": null, "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6,
  "torch_dtype": "bfloat16", "use_cache": true, "vocab_size": 262144})"},

      // Tiny models: 64 wide, 2 layers, 4 query / 2 kv heads of 16, vocabulary 256. Each
      // keeps its family's distinctive features (llama3 rope, sliding windows, biases,
      // q/k norms, softcapping, experts) so that small tests reach every code path.
      {"tiny-llama", R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
  "max_position_embeddings": 512, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 64},
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2})"},
      {"tiny-mistral", R"({
  "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
  "max_position_embeddings": 512, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": 32,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2})"},
      {"tiny-qwen2", R"({
  "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
  "max_position_embeddings": 512, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "use_sliding_window": false,
  "sliding_window": null, "max_window_layers": 2, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "bos_token_id": 1, "eos_token_id": 2})"},
      {"tiny-qwen3", R"({
  "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
  "vocab_size": 256, "max_position_embeddings": 512, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "attention_bias": false, "use_sliding_window": false, "sliding_window": null,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2})"},
      {"tiny-gemma", R"({
  "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
  "vocab_size": 256, "max_position_embeddings": 512, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
  "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0})"},
      {"tiny-gemma2", R"({
  "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 64, "intermediate_size": 128,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
  "vocab_size": 256, "max_position_embeddings": 512, "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
  "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 16, "sliding_window": 32,
  "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0})"},
      {"tiny-gemma3", R"({
  "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "hidden_size": 64,
  "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "head_dim": 16, "vocab_size": 256, "max_position_embeddings": 512, "rms_norm_eps": 1e-06,
  "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "rope_scaling": {"rope_type": "linear", "factor": 8.0},
  "hidden_activation": "gelu_pytorch_tanh", "query_pre_attn_scalar": 16, "sliding_window": 32,
  "sliding_window_pattern": 2, "tie_word_embeddings": true, "torch_dtype": "bfloat16", "bos_token_id": 2,
  "eos_token_id": [1, 106], "pad_token_id": 0})"},
      {"tiny-mixtral", R"({
  "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 64, "intermediate_size": 64,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
  "max_position_embeddings": 512, "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "num_local_experts": 4,
  "num_experts_per_tok": 2, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "bos_token_id": 1, "eos_token_id": 2})"},
      {"tiny-qwen3-moe", R"({
  "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 64,
  "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256, "max_position_embeddings": 512,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "num_experts": 4, "num_experts_per_tok": 2,
  "norm_topk_prob": true, "decoder_sparse_step": 1, "mlp_only_layers": [], "use_sliding_window": false,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16", "bos_token_id": 1,
  "eos_token_id": 2})"},
      // Qwen2-MoE: q/k/v biases, a gated shared expert beside the routed ones, and a dense
      // second layer (mlp_only_layers), so the dense MLP and the shared expert share buffers.
      {"tiny-qwen2-moe", R"({
  "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 64,
  "intermediate_size": 128, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
  "max_position_embeddings": 512, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "num_experts": 4,
  "num_experts_per_tok": 2, "norm_topk_prob": false, "decoder_sparse_step": 1, "mlp_only_layers": [1],
  "use_sliding_window": false, "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "bos_token_id": 1, "eos_token_id": 2})"},
      // Three gated DeltaNet layers and one gated full-attention layer; head dims 64 (the
      // CUDA attention and delta-rule kernels' sizes); layer 1 keeps a dense MLP.
      {"tiny-qwen3-next", R"({
  "architectures": ["Qwen3NextForCausalLM"], "model_type": "qwen3_next", "hidden_size": 64,
  "intermediate_size": 128, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48,
  "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 64, "vocab_size": 256,
  "max_position_embeddings": 512, "rms_norm_eps": 1e-06, "rope_theta": 10000000.0, "partial_rotary_factor": 0.25,
  "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 64, "linear_value_head_dim": 64,
  "linear_conv_kernel_dim": 4, "full_attention_interval": 4, "num_experts": 4, "num_experts_per_tok": 2,
  "norm_topk_prob": true, "decoder_sparse_step": 1, "mlp_only_layers": [1], "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2})"},
      // A sliding (window 8) and a full layer, head dim 64 (the CUDA kernels' sizes),
      // YaRN x4 over a 64-token context (max_position_embeddings = factor x original, as
      // transformers then uses factor as given), 4 experts top-2 of width 32.
      {"tiny-gpt-oss", R"({
  "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 64, "intermediate_size": 32,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64, "vocab_size": 256,
  "max_position_embeddings": 256, "rms_norm_eps": 1e-05, "rope_theta": 150000.0,
  "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": false,
                   "original_max_position_embeddings": 64},
  "sliding_window": 8, "layer_types": ["sliding_attention", "full_attention"],
  "num_local_experts": 4, "num_experts_per_tok": 2, "swiglu_limit": 7.0, "attention_bias": true,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "eos_token_id": 2, "pad_token_id": null})"},
      {"tiny-olmoe", R"({
  "architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 64, "intermediate_size": 32,
  "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 256,
  "max_position_embeddings": 512, "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "num_experts": 4,
  "num_experts_per_tok": 2, "norm_topk_prob": false, "clip_qkv": null, "tie_word_embeddings": false,
  "torch_dtype": "bfloat16", "bos_token_id": null, "eos_token_id": 2, "pad_token_id": 1})"},
      // Qwen3-VL: the whole checkpoint config (its text_config is what the decoder runs; the
      // vision tower reads vision_config), models/vlm/qwen3_vl/presets.cpp.
      {"qwen3-vl-8b", models::vlm::kQwen3VL8BConfig},
      {"tiny-qwen3-vl", models::vlm::kTinyQwen3VLConfig},
  };
  return kBuiltins;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

std::vector<std::string> model_config_names() {
  std::vector<std::string> out;
  for (const auto& [name, text] : builtins()) out.emplace_back(name);
  return out;
}

std::string_view model_config_json_by_name(std::string_view name) {
  const std::string key = lower(name);
  for (const auto& [n, text] : builtins())
    if (n == key) return text;
  std::string names;
  for (const auto& n : model_config_names()) names += (names.empty() ? "" : ", ") + n;
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "no built-in model config '", name, "' (known: ", names, ")");
}

ModelConfig model_config_by_name(std::string_view name) {
  return parse_model_config(model_config_json_by_name(name), concat("built-in config '", lower(name), "'"));
}

}  // namespace fk
