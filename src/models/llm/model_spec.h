// What a decoder model computes, resolved once from its ModelConfig by the family's file
// (llama.cpp, qwen.cpp, gemma.cpp, mixtral.cpp, qwen_moe.cpp, qwen2_moe.cpp, olmoe.cpp):
// which norm, activation, projections, biases, attention settings and mixture-of-experts
// blocks each layer uses, and where each weight sits in an HF checkpoint. The forward pass
// (decoder_model.cpp) reads only this struct, never config.json fields.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "models/llm/model_config.h"
#include "fk/ops/activation.h"
#include "fk/rope_cache.h"

namespace fk::engine {

enum class NormKind : uint8_t {
  rms,        // x * rsqrt(mean(x^2) + eps) * w        (Llama, Mistral, Qwen)
  gemma_rms,  // x * rsqrt(mean(x^2) + eps) * (1 + w)  (Gemma)
};
enum class MlpActivation : uint8_t { silu, gelu, gelu_tanh };

// Attention of one layer: what the attention op needs besides tensors.
struct LayerAttention {
  // A gated DeltaNet layer (Qwen3-Next): no attention, no KV; the fields below are unused.
  bool linear = false;
  int32_t window_left = -1;    // -1: full attention; else the kv positions [p - window_left, p]
  float logits_soft_cap = 0;   // 0: none
  int rope_index = 0;          // which of ModelSpec::ropes this layer's q/k use
  friend bool operator==(const LayerAttention&, const LayerAttention&) = default;
};

// The sparse MLP of MoE layers: a router (linear to E logits), softmax top-k routing and
// the routed experts (fused_experts); Qwen2-MoE adds a shared expert.
struct MoeSpec {
  bool enabled = false;
  int64_t num_experts = 0;
  int64_t top_k = 0;
  int64_t intermediate = 0;  // each expert's intermediate size
  bool renormalize = false;  // top-k weights divided by their sum (Mixtral, Qwen3-MoE)
  // HF checkpoint names under "layers.N.": the block's module (its router is
  // "<module>.gate.weight", its experts "<module>.experts...") and the names of an
  // expert's {gate, up, down} projections; the loader takes the first that exists.
  std::vector<std::string> module_names = {"mlp"};
  std::vector<std::array<std::string, 3>> expert_weight_names = {{"gate_proj", "up_proj", "down_proj"}};
  // The shared expert (Qwen2-MoE), 0: none. A SwiGLU MLP of this intermediate size that
  // every token runs beside the routed experts, its output scaled per token by
  // sigmoid(x . w) and added to theirs. Checkpoint names: "<module>.shared_expert.
  // {gate,up,down}_proj.weight" and "<module>.shared_expert_gate.weight" (w, [1, hidden]).
  int64_t shared_intermediate = 0;
  // The routed experts' weights in block fp8 (fp8_blocks.h: f8e4m3fn with an f32 scale per
  // 128 x 128 block, fused_experts' w13_scale / w2_scale) instead of the model dtype: from
  // an fp8 checkpoint, or the engine's quantization "fp8" (apply_quantization).
  bool fp8 = false;
  // gpt-oss: the router linear has a bias ("<module>.router.weight" / ".bias"), every expert
  // projection a bias, and the experts apply the clamped SwiGLU (fused_experts_swigluoai
  // with swiglu_alpha / swiglu_limit) instead of SiLU. Checkpoint layout: "<module>.experts.
  // gate_up_proj" [E, H, 2Ie] with gate and up in alternating columns, "gate_up_proj_bias"
  // [E, 2Ie], "down_proj" [E, Ie, H], "down_proj_bias" [E, H].
  bool swigluoai = false;
  float swiglu_alpha = 0;
  float swiglu_limit = 0;
  std::string router_name = "gate";
};

struct ModelSpec {
  ModelConfig config;
  std::string family;  // "llama", "qwen", "gemma": the file that resolved it

  NormKind norm = NormKind::rms;
  MlpActivation activation = MlpActivation::silu;
  bool qkv_bias = false;
  bool o_bias = false;
  bool mlp_bias = false;
  // Per-head RMSNorm of q and k before rope (Qwen3, Gemma3). Gemma3 stores those weights
  // as offsets from one too: the loader adds the one so the fused qk_norm_rope op applies.
  bool qk_norm = false;
  bool qk_norm_weight_offset = false;
  // OLMoE: RMSNorm of the whole q and k projections (weights [heads * head_dim]) before rope.
  bool qk_norm_across_heads = false;
  // Gemma 2/3: norms after attention and after the MLP, before each residual add.
  bool sandwich_norm = false;
  // Gemma: embeddings multiplied by sqrt(hidden), rounded to the model dtype first as HF does.
  bool scale_embeddings = false;
  bool tie_word_embeddings = false;
  float final_logit_soft_cap = 0;
  float rms_norm_eps = 1e-6f;
  float sm_scale = 0;  // attention logit scale

  std::vector<RopeConfig> ropes;       // one per distinct rope (Gemma3: global and local)
  std::vector<LayerAttention> layers;  // one per decoder layer
  MoeSpec moe;                         // layers with config.is_moe_layer(l) use it

  // HF checkpoint names. `prefix` is what precedes "layers.N." and "embed_tokens"
  // ("model." or, for multimodal wrappers, "language_model.model.").
  std::string prefix = "model.";
  std::string pre_mlp_norm_name = "post_attention_layernorm";  // Gemma2/3: pre_feedforward_layernorm
  std::string post_attn_norm_name;                             // sandwich only: post_attention_layernorm
  std::string post_mlp_norm_name;                              // sandwich only: post_feedforward_layernorm

  // A block-fp8 checkpoint (config.json's quantization_config: quant_method "fp8",
  // weight_block_size [128, 128]): any Linear weight X.weight may be F8_E4M3 with its
  // F32 block scales in X.weight_scale_inv. The routed experts load as fp8 (moe.fp8);
  // every other such weight is dequantized to the model dtype at load time.
  bool fp8_checkpoint = false;

  // Qwen3-Next: the attention layers' q_proj gives each head a query and an output gate
  // (the fused qkv weight holds [q | k | v | gate] rows; attention output * sigmoid(gate)).
  bool attention_output_gate = false;
  // gpt-oss: a learned sink logit per query head ("self_attn.sinks" [Hq]) joins each
  // attention softmax's denominator (attention_sink_rescale after the attention op).
  bool attention_sinks = false;
  // gpt-oss: the checkpoint's experts are MXFP4 (config.json's quantization_config
  // quant_method "mxfp4", cleared from `config` here), dequantized at load.
  bool mxfp4_experts = false;

  int64_t num_layers() const { return static_cast<int64_t>(layers.size()); }
  bool is_moe_layer(int64_t l) const { return moe.enabled && config.is_moe_layer(l); }
  int64_t qkv_rows() const {
    return config.q_size() + 2 * config.kv_size() + (attention_output_gate ? config.q_size() : 0);
  }
  bool is_linear_layer(int64_t l) const { return layers[static_cast<size_t>(l)].linear; }
  // The KV cache holds the attention layers only: layer l's index there (-1 for linear layers).
  int64_t kv_layer(int64_t l) const;
  int64_t num_kv_layers() const;
  bool has_recurrent_state() const { return num_kv_layers() < num_layers(); }
};

// The spec of a config, by its model_type (throws naming the type when no family claims it,
// or naming the setting the engine does not run, e.g. shared experts or dynamic rope scaling).
ModelSpec model_spec_for(const ModelConfig& config);

// The engine's quantization option (EngineConfig::quantization, --quantization): "" runs
// what the checkpoint holds; "fp8" runs the routed experts in block fp8 (moe.fp8),
// quantizing them at load time where the checkpoint's (or the dummy weights) are not.
// Throws naming the option for other names and for models without routed experts.
void apply_quantization(ModelSpec& spec, const std::string& quantization);

// ---- for the family files -----------------------------------------------------------
struct ModelFamily {
  const char* name;
  std::vector<std::string> model_types;
  void (*resolve)(ModelSpec& spec);  // fills the family's choices into a spec whose common fields are set
};
struct ModelFamilyRegistrar {
  explicit ModelFamilyRegistrar(ModelFamily family);
};
// The RopeConfig of a config's rope_theta and rope_scaling (theta overridable: Gemma3's local layers).
RopeConfig rope_config_of(const ModelConfig& config, double theta);
MlpActivation activation_of(const std::string& hidden_act);
// Fills spec.moe from the config's MoE fields (softmax top-k routing); the family then
// sets its checkpoint names. `gated_shared_expert`: the family runs the config's shared
// expert as Qwen2-MoE does (sigmoid-gated); for other families a config with a shared
// expert is refused, naming the setting.
void resolve_moe(ModelSpec& spec, bool gated_shared_expert = false);

}  // namespace fk::engine
