// Model configurations: a Hugging Face config.json turned into one typed struct that
// covers dense decoder LLMs and mixture-of-experts models.
//
// Families: llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text (and gemma3, whose
// text model is nested under "text_config"), mixtral, qwen3_moe, qwen2_moe, olmoe, and the
// hybrid qwen3_next (gated DeltaNet layers between gated full-attention layers), and gpt_oss
// (attention sinks, alternating sliding / full layers, biased experts with a clamped SwiGLU). Fields a family
// leaves out take that family's defaults (those of its transformers config class); the
// fields that define the model's shape are required. Everything derived (head_dim, the
// per-layer attention kind, q/k norm, which layers are MoE) is resolved here, once, so
// model code never re-interprets config.json.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fk/dtype.h"

namespace fk {

enum class RopeScalingKind : uint8_t { none, linear, dynamic, llama3, yarn };
std::string_view rope_scaling_kind_name(RopeScalingKind t);

// "rope_scaling" ("rope_type" or the older "type"). Only the fields of `type` are meaningful.
struct RopeScaling {
  RopeScalingKind type = RopeScalingKind::none;
  double factor = 1.0;  // linear, dynamic, llama3, yarn
  // llama3: wavelengths above original/low_freq_factor are scaled by 1/factor, below
  // original/high_freq_factor kept, smoothly interpolated between.
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // llama3, yarn, dynamic: the context the model was pretrained with (yarn and dynamic
  // default to max_position_embeddings).
  int64_t original_max_position_embeddings = 0;
  // yarn
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 1.0;
  double mscale_all_dim = 0.0;
  std::optional<double> attention_factor;  // overrides the yarn attention scaling when given
  bool truncate = true;  // yarn: floor/ceil the correction range (gpt-oss sets false)

  friend bool operator==(const RopeScaling&, const RopeScaling&) = default;
};

// What mixes tokens in a layer: softmax attention over the whole context or a sliding
// window, or (hybrids: Qwen3-Next) linear attention with a fixed-size recurrent state.
enum class AttentionKind : uint8_t { full, sliding, linear };
// How q and k are normalised before RoPE.
enum class QkNorm : uint8_t {
  none,
  per_head,     // RMSNorm over head_dim, weights [head_dim] (qwen3, qwen3_moe, gemma3)
  across_heads  // RMSNorm over all heads, weights [heads * head_dim] (olmoe)
};

struct MoeConfig {
  int64_t num_experts = 0;  // 0: a dense model
  int64_t num_experts_per_tok = 0;
  int64_t expert_intermediate_size = 0;  // moe_intermediate_size, or intermediate_size (mixtral, olmoe)
  bool norm_topk_prob = false;           // renormalise the top-k routing weights to sum to 1
  int64_t shared_expert_intermediate_size = 0;  // 0: no shared expert (qwen2_moe: its sigmoid-gated one)
  int64_t decoder_sparse_step = 1;              // every step-th layer is sparse (qwen3_moe, qwen2_moe)
  std::vector<int64_t> mlp_only_layers;         // layers that stay dense (qwen3_moe, qwen2_moe)

  friend bool operator==(const MoeConfig&, const MoeConfig&) = default;
};

// "quantization_config" of a quantized checkpoint, as config.json gives it (what the engine
// runs of it is decided by model_spec_for). Block-scaled fp8 (DeepSeek-V3, Qwen3-*-FP8):
// quant_method "fp8", weight_block_size [128, 128], activation_scheme "dynamic".
struct QuantizationConfig {
  std::string quant_method;                // "": the checkpoint is not quantized
  std::vector<int64_t> weight_block_size;  // [rows, cols] of the block one scale covers; empty: not given
  std::string activation_scheme;           // "dynamic", "static", or "" when not given

  friend bool operator==(const QuantizationConfig&, const QuantizationConfig&) = default;
};

// The gated DeltaNet layers of Qwen3-Next (layer_types "linear_attention"): the q, k and v
// heads pass a causal depthwise convolution of conv_kernel taps (SiLU), then the gated delta
// rule with v_heads value heads grouped over k_heads query/key heads.
struct LinearAttentionConfig {
  int64_t k_heads = 0;      // linear_num_key_heads
  int64_t v_heads = 0;      // linear_num_value_heads (a multiple of k_heads)
  int64_t k_head_dim = 0;   // linear_key_head_dim
  int64_t v_head_dim = 0;   // linear_value_head_dim
  int64_t conv_kernel = 0;  // linear_conv_kernel_dim

  int64_t key_dim() const { return k_heads * k_head_dim; }
  int64_t value_dim() const { return v_heads * v_head_dim; }
  int64_t conv_dim() const { return 2 * key_dim() + value_dim(); }  // q | k | v through the convolution
  friend bool operator==(const LinearAttentionConfig&, const LinearAttentionConfig&) = default;
};

struct ModelConfig {
  std::string model_type;                  // the text model's: "gemma3_text" for gemma3
  std::vector<std::string> architectures;  // as given ("LlamaForCausalLM"), may be empty

  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // dense MLP width (0 for MoE models without dense layers)
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // defaults to num_attention_heads
  int64_t head_dim = 0;             // defaults to hidden_size / num_attention_heads
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;

  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  double rope_local_base_freq = 0;     // theta of sliding layers when different (gemma3), else 0
  double partial_rotary_factor = 1.0;  // rotary_dim = head_dim * factor

  bool tie_word_embeddings = false;
  std::string hidden_act = "silu";  // silu, gelu, gelu_pytorch_tanh, gelu_new, gelu_fast, relu
  bool attention_bias = false;      // bias on q, k, v projections
  bool attention_out_bias = false;  // bias on the output projection
  bool mlp_bias = false;
  QkNorm qk_norm = QkNorm::none;

  // Gemma: embeddings scaled by sqrt(hidden_size), RMSNorm weights stored as (w - 1).
  bool embedding_scale = false;
  bool norm_weight_offset = false;
  bool sandwich_norm = false;  // gemma2/3: extra norms after attention and after the MLP

  int64_t sliding_window = 0;            // 0: no sliding-window attention
  std::vector<AttentionKind> layer_types;  // one per layer
  double attn_logit_softcapping = 0;     // 0: off
  double final_logit_softcapping = 0;    // 0: off
  double query_pre_attn_scalar = 0;      // attention scale is its rsqrt; defaults to head_dim
  double clip_qkv = 0;                   // clamp q, k, v to [-clip, clip] (olmoe); 0: off

  std::optional<DType> torch_dtype;  // "torch_dtype" or "dtype", when given
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> pad_token_id;

  MoeConfig moe;
  QuantizationConfig quantization;
  // qwen3_next: the linear-attention layers' shapes, and the full-attention layers' output
  // gate (q_proj gives each head a query and a gate; the output is attn * sigmoid(gate)).
  LinearAttentionConfig linear_attention;
  bool attention_output_gate = false;
  // gpt_oss: learned per-head attention sinks, and its experts' clamped SwiGLU
  // (swiglu_alpha, swiglu_limit; 0 for the other families).
  bool attention_sinks = false;
  double swiglu_alpha = 0;
  double swiglu_limit = 0;
  // qwen3_vl_text: multimodal rotary embedding (rope_scaling / rope_parameters
  // "mrope_section": frequencies per position axis t, h, w; "mrope_interleaved": Qwen3-VL's
  // cycling layout, else Qwen2-VL's chunks). Empty for text-only families.
  std::vector<int64_t> mrope_section;
  bool mrope_interleaved = false;

  bool is_moe() const { return moe.num_experts > 0; }
  bool is_linear_attention_layer(int64_t layer) const {
    return layer >= 0 && layer < static_cast<int64_t>(layer_types.size()) &&
           layer_types[static_cast<size_t>(layer)] == AttentionKind::linear;
  }
  bool has_linear_attention() const { return linear_attention.k_heads > 0; }
  // Whether layer `layer` uses the sparse MoE block (false for dense models).
  bool is_moe_layer(int64_t layer) const;
  int64_t q_size() const { return num_attention_heads * head_dim; }
  int64_t kv_size() const { return num_key_value_heads * head_dim; }
  int64_t rotary_dim() const;
  // 1/sqrt(query_pre_attn_scalar): what scores are multiplied by.
  double attention_scale() const;

  friend bool operator==(const ModelConfig&, const ModelConfig&) = default;
};

// The model_type values understood, for messages and `fk` listings.
std::vector<std::string> supported_model_types();

// Parses config.json text; `source` names it in errors. Throws fk::Error
// (FK_ERR_INVALID_ARGUMENT) naming the field for missing required fields, wrong types,
// non-positive sizes, contradictions and unsupported model types or rope scalings.
ModelConfig parse_model_config(std::string_view json_text, std::string_view source = "config.json");
// `path` is a config.json or a directory containing one.
ModelConfig load_model_config(const std::filesystem::path& path);
// config.json text (HF field names) that parses back to an equal ModelConfig.
std::string model_config_to_json(const ModelConfig& config);

// Built-in configs: the public shapes of released models ("llama-3.1-8b", "qwen3-8b",
// "mistral-7b-v0.3", "gemma-2-9b", "qwen3-30b-a3b", "mixtral-8x7b", "olmoe-1b-7b",
// "qwen1.5-moe-a2.7b") and
// tiny test models of each family ("tiny-llama", "tiny-qwen3-moe", ...: hidden 64,
// 2 layers). Names are case-insensitive.
ModelConfig model_config_by_name(std::string_view name);
std::vector<std::string> model_config_names();
// The built-in's config.json text.
std::string_view model_config_json_by_name(std::string_view name);

}  // namespace fk
