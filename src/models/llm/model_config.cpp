// config.json -> ModelConfig: family lookup, field parsing with the family's defaults,
// derived fields, and consistency checks.
#include "models/llm/model_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "models/llm/model_config_families.h"
#include "models/llm/model_config_fields.h"
#include "core/safetensors/strict_json.h"
#include "fk/status.h"

namespace fk {

using nlohmann::json;
using model_config_detail::AttentionBiasRule;
using model_config_detail::ConfigFields;
using model_config_detail::Family;
using model_config_detail::MoeRule;
using model_config_detail::SlidingRule;

std::string_view rope_scaling_kind_name(RopeScalingKind t) {
  switch (t) {
    case RopeScalingKind::none: return "default";
    case RopeScalingKind::linear: return "linear";
    case RopeScalingKind::dynamic: return "dynamic";
    case RopeScalingKind::llama3: return "llama3";
    case RopeScalingKind::yarn: return "yarn";
  }
  return "invalid";
}

std::vector<std::string> supported_model_types() {
  std::vector<std::string> out;
  for (const Family& f : model_config_detail::families()) out.emplace_back(f.model_type);
  out.emplace_back("gemma3");  // the multimodal wrapper around gemma3_text
  out.emplace_back("qwen3_vl");  // the multimodal wrapper around qwen3_vl_text
  return out;
}

bool ModelConfig::is_moe_layer(int64_t layer) const {
  if (!is_moe()) return false;
  if (std::find(moe.mlp_only_layers.begin(), moe.mlp_only_layers.end(), layer) != moe.mlp_only_layers.end())
    return false;
  return (layer + 1) % moe.decoder_sparse_step == 0;
}

int64_t ModelConfig::rotary_dim() const {
  return static_cast<int64_t>(std::llround(static_cast<double>(head_dim) * partial_rotary_factor));
}

double ModelConfig::attention_scale() const { return 1.0 / std::sqrt(query_pre_attn_scalar); }

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

RopeScaling parse_rope_scaling(const json& j, const ConfigFields& outer, int64_t max_position_embeddings) {
  RopeScaling r;
  if (j.is_null()) return r;
  if (!j.is_object()) outer.fail(concat("'rope_scaling' must be an object or null, got ", safetensors::json_type_name(j)));
  const json no_defaults = json::object();
  const ConfigFields f(j, no_defaults, outer.source() + ": rope_scaling", "rope_scaling");
  // Newer configs say "rope_type", older ones "type"; when both are given they must agree.
  const auto rope_type = f.optional_string("rope_type");
  const auto type = f.optional_string("type");
  if (rope_type && type && *rope_type != *type)
    f.fail(concat("'rope_type' (", *rope_type, ") and 'type' (", *type, ") disagree"));
  if (!rope_type && !type) f.fail("has neither 'rope_type' nor 'type'");
  const std::string name = rope_type ? *rope_type : *type;
  if (name == "default") return r;
  if (name == "linear") {
    r.type = RopeScalingKind::linear;
  } else if (name == "dynamic") {
    r.type = RopeScalingKind::dynamic;
  } else if (name == "llama3") {
    r.type = RopeScalingKind::llama3;
  } else if (name == "yarn") {
    r.type = RopeScalingKind::yarn;
  } else {
    f.fail(concat("unsupported rope scaling type '", name, "' (supported: default, linear, dynamic, llama3, yarn)"));
  }
  r.factor = f.number("factor");
  f.require_positive("factor", r.factor);
  switch (r.type) {
    case RopeScalingKind::llama3:
      r.low_freq_factor = f.number("low_freq_factor");
      r.high_freq_factor = f.number("high_freq_factor");
      r.original_max_position_embeddings = f.integer("original_max_position_embeddings");
      f.require_positive("low_freq_factor", r.low_freq_factor);
      if (!(r.high_freq_factor > r.low_freq_factor))
        f.fail(concat("'high_freq_factor' (", r.high_freq_factor, ") must exceed 'low_freq_factor' (",
                      r.low_freq_factor, ")"));
      break;
    case RopeScalingKind::yarn:
      r.beta_fast = f.optional_number("beta_fast").value_or(32.0);
      r.beta_slow = f.optional_number("beta_slow").value_or(1.0);
      r.mscale = f.optional_number("mscale").value_or(1.0);
      r.mscale_all_dim = f.optional_number("mscale_all_dim").value_or(0.0);
      r.attention_factor = f.optional_number("attention_factor");
      r.original_max_position_embeddings =
          f.optional_integer("original_max_position_embeddings").value_or(max_position_embeddings);
      if (const json* t = f.find("truncate"); t && !t->is_null()) {
        if (!t->is_boolean()) f.fail(concat("'truncate' must be true or false, got ", t->dump()));
        r.truncate = t->get<bool>();
      }
      if (!(r.beta_fast > r.beta_slow))
        f.fail(concat("'beta_fast' (", r.beta_fast, ") must exceed 'beta_slow' (", r.beta_slow, ")"));
      break;
    case RopeScalingKind::dynamic:
      r.original_max_position_embeddings =
          f.optional_integer("original_max_position_embeddings").value_or(max_position_embeddings);
      break;
    default: break;
  }
  if (r.type != RopeScalingKind::linear)
    f.require_positive("original_max_position_embeddings", r.original_max_position_embeddings);
  return r;
}

// "quantization_config", recorded as given: which methods and block sizes the engine runs
// is model_spec_for's decision, so that tools which only read configs take any of them.
QuantizationConfig parse_quantization(const json& j, const ConfigFields& outer) {
  QuantizationConfig q;
  if (j.is_null()) return q;
  if (!j.is_object())
    outer.fail(concat("'quantization_config' must be an object or null, got ", safetensors::json_type_name(j)));
  const json no_defaults = json::object();
  const ConfigFields f(j, no_defaults, outer.source() + ": quantization_config", "quantization_config");
  q.quant_method = f.string("quant_method");
  if (q.quant_method.empty()) f.fail("'quant_method' is empty");
  if (const json* block = f.find("weight_block_size"); block && !block->is_null()) {
    if (!block->is_array()) f.fail(concat("'weight_block_size' must be a list of integers, got ", block->dump()));
    for (const json& b : *block) {
      if (!b.is_number_integer() || b.get<int64_t>() <= 0)
        f.fail(concat("'weight_block_size' must be a list of positive integers, got ", block->dump()));
      q.weight_block_size.push_back(b.get<int64_t>());
    }
  }
  q.activation_scheme = f.optional_string("activation_scheme").value_or("");
  return q;
}

std::vector<AttentionKind> parse_layer_types(const json& j, const ConfigFields& f, int64_t layers,
                                             bool linear_allowed) {
  if (!j.is_array()) f.fail(concat("'layer_types' must be a list, got ", safetensors::json_type_name(j)));
  if (static_cast<int64_t>(j.size()) != layers)
    f.fail(concat("'layer_types' has ", j.size(), " entries but 'num_hidden_layers' is ", layers));
  std::vector<AttentionKind> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const json& e = j[i];
    if (e == "full_attention") {
      out.push_back(AttentionKind::full);
    } else if (e == "sliding_attention") {
      out.push_back(AttentionKind::sliding);
    } else if (e == "linear_attention" && linear_allowed) {
      out.push_back(AttentionKind::linear);
    } else if (e == "linear_attention") {
      f.fail(concat("'layer_types'[", i, "] is \"linear_attention\", which this model type does not have"));
    } else {
      f.fail(concat("'layer_types'[", i, "] is ", e.dump(), ": expected \"full_attention\" or \"sliding_attention\""));
    }
  }
  return out;
}

// Which layers use sliding-window attention, from the family's rule (or an explicit
// "layer_types", which newer configs carry and which wins).
void resolve_sliding(ModelConfig& c, const Family& fam, const ConfigFields& f) {
  const int64_t layers = c.num_hidden_layers;
  c.layer_types.assign(static_cast<size_t>(layers), AttentionKind::full);
  int64_t window = f.optional_integer("sliding_window").value_or(0);
  if (fam.sliding == SlidingRule::qwen && !f.boolean("use_sliding_window")) window = 0;
  if (window < 0) f.fail(concat("'sliding_window' must be positive or null, got ", window));
  c.sliding_window = window;

  if (f.in_config("layer_types") && !f.find("layer_types")->is_null()) {
    c.layer_types = parse_layer_types(*f.find("layer_types"), f, layers, fam.hybrid_linear);
  } else if (fam.hybrid_linear) {
    // Qwen3NextConfig: every full_attention_interval-th layer is full attention.
    const int64_t interval = f.integer("full_attention_interval");
    f.require_positive("full_attention_interval", interval);
    for (int64_t i = 0; i < layers; ++i)
      if ((i + 1) % interval != 0) c.layer_types[static_cast<size_t>(i)] = AttentionKind::linear;
  } else if (window > 0) {
    switch (fam.sliding) {
      case SlidingRule::never: break;
      case SlidingRule::all_layers: c.layer_types.assign(static_cast<size_t>(layers), AttentionKind::sliding); break;
      case SlidingRule::qwen: {
        const int64_t first = f.integer("max_window_layers");
        for (int64_t i = std::max<int64_t>(first, 0); i < layers; ++i)
          c.layer_types[static_cast<size_t>(i)] = AttentionKind::sliding;
        break;
      }
      case SlidingRule::gemma2_alternate:
        for (int64_t i = 0; i < layers; i += 2) c.layer_types[static_cast<size_t>(i)] = AttentionKind::sliding;
        break;
      case SlidingRule::gemma3_pattern: {
        const int64_t pattern = f.integer("sliding_window_pattern");
        f.require_positive("sliding_window_pattern", pattern);
        for (int64_t i = 0; i < layers; ++i)
          if ((i + 1) % pattern != 0) c.layer_types[static_cast<size_t>(i)] = AttentionKind::sliding;
        break;
      }
    }
  }
  const bool any_sliding = std::count(c.layer_types.begin(), c.layer_types.end(), AttentionKind::sliding) > 0;
  if (any_sliding && c.sliding_window <= 0)
    f.fail("'layer_types' has sliding_attention layers but 'sliding_window' is not set");
  if (!any_sliding) c.sliding_window = 0;  // a window no layer uses is no window
}

// The number of experts under the family's own key or the other one: transformers maps
// one onto the other (attribute_map), and configs it writes may carry either.
int64_t expert_count(const ConfigFields& f, const char* key, const char* alias) {
  const auto a = f.optional_integer(key), b = f.optional_integer(alias);
  if (a && b && *a != *b) f.fail(concat("'", key, "' (", *a, ") and '", alias, "' (", *b, ") disagree"));
  if (a) return *a;
  if (b) return *b;
  return f.integer(key);  // the "missing required field" error
}

// Qwen's MoE families size their experts with "moe_intermediate_size" and may have no dense
// layer; the others size their experts with the dense "intermediate_size".
bool experts_have_own_width(MoeRule rule) { return rule == MoeRule::qwen3_moe || rule == MoeRule::qwen2_moe; }

void parse_moe(ModelConfig& c, const Family& fam, const ConfigFields& f) {
  MoeConfig& m = c.moe;
  switch (fam.moe) {
    case MoeRule::dense: return;
    case MoeRule::mixtral:
      m.num_experts = expert_count(f, "num_local_experts", "num_experts");
      m.expert_intermediate_size = c.intermediate_size;
      m.norm_topk_prob = true;  // Mixtral renormalises its top-k routing weights
      break;
    case MoeRule::qwen3_moe:
    case MoeRule::qwen2_moe: {
      m.num_experts = expert_count(f, "num_experts", "num_local_experts");
      m.expert_intermediate_size = f.integer("moe_intermediate_size");
      m.norm_topk_prob = f.boolean("norm_topk_prob");
      m.decoder_sparse_step = f.integer("decoder_sparse_step");
      const json* only = f.find("mlp_only_layers");
      if (only && !only->is_null()) {
        if (!only->is_array()) f.fail("'mlp_only_layers' must be a list of layer indices");
        for (const json& e : *only) {
          if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() >= c.num_hidden_layers)
            f.fail(concat("'mlp_only_layers' entry ", e.dump(), " is not a layer index in [0, ", c.num_hidden_layers, ")"));
          m.mlp_only_layers.push_back(e.get<int64_t>());
        }
      }
      break;
    }
    case MoeRule::olmoe:
      m.num_experts = expert_count(f, "num_experts", "num_local_experts");
      m.expert_intermediate_size = c.intermediate_size;
      m.norm_topk_prob = f.boolean("norm_topk_prob");
      break;
    case MoeRule::gpt_oss:
      // GptOssTopKRouter: softmax over the k largest logits, i.e. the renormalised top-k.
      m.num_experts = expert_count(f, "num_local_experts", "num_experts");
      m.expert_intermediate_size = c.intermediate_size;
      m.norm_topk_prob = true;
      c.swiglu_alpha = f.number("swiglu_alpha");
      c.swiglu_limit = f.number("swiglu_limit");
      if (!std::isfinite(c.swiglu_alpha)) f.fail(concat("'swiglu_alpha' must be finite, got ", c.swiglu_alpha));
      f.require_positive("swiglu_limit", c.swiglu_limit);
      c.attention_sinks = true;
      break;
  }
  m.num_experts_per_tok = f.integer("num_experts_per_tok");
  // Qwen2-MoE's shared expert defines the model's shape: required there (Qwen2MoeConfig's
  // default, 5632, is one particular model's), optional elsewhere.
  m.shared_expert_intermediate_size = fam.moe == MoeRule::qwen2_moe
                                          ? f.integer("shared_expert_intermediate_size")
                                          : f.optional_integer("shared_expert_intermediate_size").value_or(0);
  f.require_positive(fam.moe == MoeRule::mixtral || fam.moe == MoeRule::gpt_oss ? "num_local_experts" : "num_experts",
                     m.num_experts);
  f.require_positive("num_experts_per_tok", m.num_experts_per_tok);
  if (m.num_experts_per_tok > m.num_experts)
    f.fail(concat("'num_experts_per_tok' (", m.num_experts_per_tok, ") exceeds the number of experts (",
                  m.num_experts, ")"));
  f.require_positive(experts_have_own_width(fam.moe) ? "moe_intermediate_size" : "intermediate_size",
                     m.expert_intermediate_size);
  f.require_positive("decoder_sparse_step", m.decoder_sparse_step);
  if (m.shared_expert_intermediate_size < 0)
    f.fail(concat("'shared_expert_intermediate_size' must be >= 0, got ", m.shared_expert_intermediate_size));
}

// Qwen3-Next's linear-attention shapes and what this code runs of the model: refusals name
// the setting (the ops take 2 to 4 conv taps and SiLU; the attention projections carry no
// bias here).
void parse_linear_attention(ModelConfig& c, const ConfigFields& f) {
  LinearAttentionConfig& la = c.linear_attention;
  la.k_heads = f.integer("linear_num_key_heads");
  la.v_heads = f.integer("linear_num_value_heads");
  la.k_head_dim = f.integer("linear_key_head_dim");
  la.v_head_dim = f.integer("linear_value_head_dim");
  la.conv_kernel = f.integer("linear_conv_kernel_dim");
  for (const char* key : {"linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
                          "linear_value_head_dim", "linear_conv_kernel_dim"})
    f.require_positive(key, f.integer(key));
  if (la.v_heads % la.k_heads != 0)
    f.fail(concat("'linear_num_value_heads' (", la.v_heads, ") is not a multiple of 'linear_num_key_heads' (",
                  la.k_heads, ")"));
  if (la.conv_kernel < 2 || la.conv_kernel > 4)
    f.fail(concat("'linear_conv_kernel_dim' ", la.conv_kernel, " is not implemented (the short convolution takes 2 to 4 taps)"));
  if (c.hidden_act != "silu")
    f.fail(concat("'hidden_act' '", c.hidden_act, "' is not implemented for qwen3_next (its convolution and gated norm use SiLU)"));
  if (c.attention_bias) f.fail("'attention_bias' true is not implemented for qwen3_next (its gated q_proj has no bias here)");
  if (c.sliding_window > 0) f.fail("'sliding_window' is not implemented for qwen3_next");
  c.attention_output_gate = true;
  c.norm_weight_offset = true;  // Qwen3NextRMSNorm: x * (1 + w)
}

const std::vector<std::string> kActivations = {"silu", "gelu", "gelu_pytorch_tanh", "gelu_new", "gelu_fast", "relu"};

// M-RoPE (qwen3_vl_text): "mrope_section" [t, h, w] summing to rotary_dim / 2 (checked
// once head_dim is known: here), "mrope_interleaved" (Qwen3-VL: true).
void parse_mrope(ModelConfig& c, const json* rope, const ConfigFields& f) {
  if (!rope || !rope->is_object() || !rope->contains("mrope_section"))
    f.fail("qwen3_vl_text needs 'mrope_section' in 'rope_scaling' (or 'rope_parameters')");
  const json& s = rope->at("mrope_section");
  if (!s.is_array() || s.size() != 3)
    f.fail(concat("'mrope_section' must be a list of 3 integers (t, h, w), got ", s.dump()));
  int64_t sum = 0;
  for (const json& v : s) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      f.fail(concat("'mrope_section' must hold non-negative integers, got ", s.dump()));
    c.mrope_section.push_back(v.get<int64_t>());
    sum += v.get<int64_t>();
  }
  if (sum * 2 != c.head_dim)
    f.fail(concat("'mrope_section' ", s.dump(), " sums to ", sum, ", not head_dim / 2 = ", c.head_dim / 2));
  c.mrope_interleaved = false;
  if (rope->contains("mrope_interleaved")) {
    const json& i = rope->at("mrope_interleaved");
    if (!i.is_boolean()) f.fail(concat("'mrope_interleaved' must be true or false, got ", i.dump()));
    c.mrope_interleaved = i.get<bool>();
  }
}

ModelConfig parse_text_model(const json& cfg, const json* outer, const std::string& source) {
  const std::string model_type = [&] {
    const json* t = cfg.contains("model_type") ? &cfg.at("model_type") : nullptr;
    if (!t) FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": missing 'model_type' (supported: ", join(supported_model_types()), ")");
    if (!t->is_string()) FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": 'model_type' must be a string");
    return t->get<std::string>();
  }();
  const Family* fam = model_config_detail::find_family(model_type);
  if (!fam)
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": unsupported model_type '", model_type,
            "' (supported: ", join(supported_model_types()), ")");
  const json defaults = json::parse(fam->defaults_json);
  const ConfigFields f(cfg, defaults, source, model_type);

  ModelConfig c;
  c.model_type = model_type;
  const json* archs = outer && outer->contains("architectures") ? &outer->at("architectures") : f.find("architectures");
  if (archs && !archs->is_null()) {
    if (!archs->is_array()) f.fail("'architectures' must be a list of strings");
    for (const json& a : *archs) {
      if (!a.is_string()) f.fail("'architectures' must be a list of strings");
      c.architectures.push_back(a.get<std::string>());
    }
  }

  c.hidden_size = f.integer("hidden_size");
  c.num_hidden_layers = f.integer("num_hidden_layers");
  c.num_attention_heads = f.integer("num_attention_heads");
  c.vocab_size = f.integer("vocab_size");
  c.max_position_embeddings = f.integer("max_position_embeddings");
  for (const char* key : {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size", "max_position_embeddings"})
    f.require_positive(key, f.integer(key));
  // qwen3_moe and qwen2_moe may have no dense layer at all; every other family needs the
  // dense width (mixtral and olmoe size their experts with it).
  const bool dense_width_optional = experts_have_own_width(fam->moe);
  const auto intermediate = f.optional_integer("intermediate_size");
  if (!intermediate && !dense_width_optional) f.integer("intermediate_size");  // "missing required field"
  c.intermediate_size = intermediate.value_or(0);
  if (intermediate) f.require_positive("intermediate_size", c.intermediate_size);

  c.num_key_value_heads = f.optional_integer("num_key_value_heads").value_or(c.num_attention_heads);
  f.require_positive("num_key_value_heads", c.num_key_value_heads);
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    f.fail(concat("'num_attention_heads' (", c.num_attention_heads, ") is not a multiple of 'num_key_value_heads' (",
                  c.num_key_value_heads, ")"));
  if (const auto hd = f.optional_integer("head_dim")) {
    c.head_dim = *hd;
    f.require_positive("head_dim", c.head_dim);
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      f.fail(concat("'hidden_size' (", c.hidden_size, ") is not divisible by 'num_attention_heads' (",
                    c.num_attention_heads, ") and 'head_dim' is not given"));
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }

  c.rms_norm_eps = f.number("rms_norm_eps");
  f.require_positive("rms_norm_eps", c.rms_norm_eps);

  // RoPE: "rope_theta" + "rope_scaling", or the newer single "rope_parameters" object.
  const json* rope_params = f.find("rope_parameters");
  double local_theta_from_parameters = 0;
  if (rope_params && !rope_params->is_null()) {
    if (!rope_params->is_object()) f.fail("'rope_parameters' must be an object");
    const json no_defaults = json::object();
    // transformers >= 5 writes one object, or (Gemma 3) one per layer type: the full-attention
    // layers' rope and the sliding layers' unscaled one (rope_local_base_freq before).
    const bool per_layer_type = rope_params->contains("full_attention");
    const json& global = per_layer_type ? rope_params->at("full_attention") : *rope_params;
    if (!global.is_object() || !global.contains("rope_type"))
      f.fail("'rope_parameters' needs 'rope_type' (in 'full_attention' when given per layer type)");
    const ConfigFields rp(global, no_defaults, source + ": rope_parameters", "rope_parameters");
    c.rope_theta = rp.number("rope_theta");
    c.rope_scaling = parse_rope_scaling(global, f, c.max_position_embeddings);
    if (per_layer_type && rope_params->contains("sliding_attention")) {
      const json& local = rope_params->at("sliding_attention");
      if (!local.is_object()) f.fail("'rope_parameters'.'sliding_attention' must be an object");
      const ConfigFields lp(local, no_defaults, source + ": rope_parameters.sliding_attention", "rope_parameters");
      if (parse_rope_scaling(local, f, c.max_position_embeddings).type != RopeScalingKind::none)
        f.fail("'rope_parameters'.'sliding_attention' with a rope scaling is not supported (only 'default')");
      local_theta_from_parameters = lp.number("rope_theta");
    }
  } else {
    c.rope_theta = f.number("rope_theta");
    const json* rs = f.find("rope_scaling");
    if (rs) c.rope_scaling = parse_rope_scaling(*rs, f, c.max_position_embeddings);
  }
  if (model_type == "qwen3_vl_text") {
    const json* rs = rope_params && !rope_params->is_null() ? rope_params : f.find("rope_scaling");
    parse_mrope(c, rs, f);
  }
  f.require_positive("rope_theta", c.rope_theta);
  c.rope_local_base_freq = local_theta_from_parameters > 0 && !f.in_config("rope_local_base_freq")
                               ? local_theta_from_parameters
                               : f.optional_number("rope_local_base_freq").value_or(0.0);
  if (c.rope_local_base_freq < 0) f.fail("'rope_local_base_freq' must be positive");
  // transformers >= 5 may carry partial_rotary_factor inside rope_parameters.
  std::optional<double> rope_partial;
  if (rope_params && rope_params->is_object() && rope_params->contains("partial_rotary_factor") &&
      !f.in_config("partial_rotary_factor")) {
    const json& v = rope_params->at("partial_rotary_factor");
    if (!v.is_number()) f.fail("'rope_parameters'.'partial_rotary_factor' must be a number");
    rope_partial = v.get<double>();
  }
  c.partial_rotary_factor = rope_partial ? *rope_partial : f.optional_number("partial_rotary_factor").value_or(1.0);
  if (!(c.partial_rotary_factor > 0 && c.partial_rotary_factor <= 1))
    f.fail(concat("'partial_rotary_factor' must be in (0, 1], got ", c.partial_rotary_factor));
  const double rot = static_cast<double>(c.head_dim) * c.partial_rotary_factor;
  if (rot != std::floor(rot) || static_cast<int64_t>(rot) % 2 != 0)
    f.fail(concat("'partial_rotary_factor' (", c.partial_rotary_factor, ") x head_dim (", c.head_dim,
                  ") must be an even whole number of rotary dimensions"));

  c.tie_word_embeddings = f.boolean("tie_word_embeddings");
  // Gemma checkpoints were trained with tanh-approximated GELU; early Gemma configs say
  // "hidden_act": "gelu", which transformers overrides with "hidden_activation". Do the same.
  c.hidden_act = fam->gemma ? f.string("hidden_activation") : f.string("hidden_act");
  if (c.hidden_act == "swish") c.hidden_act = "silu";
  if (std::find(kActivations.begin(), kActivations.end(), c.hidden_act) == kActivations.end())
    f.fail(concat("unsupported activation '", c.hidden_act, "' (supported: ", join(kActivations), ")"));

  switch (fam->attention_bias) {
    case AttentionBiasRule::configurable: c.attention_bias = c.attention_out_bias = f.boolean("attention_bias"); break;
    case AttentionBiasRule::never: break;
    case AttentionBiasRule::qkv_always: c.attention_bias = true; break;
    case AttentionBiasRule::qkv_key: c.attention_bias = f.boolean("qkv_bias"); break;
  }
  c.mlp_bias = fam->reads_mlp_bias && f.boolean("mlp_bias");
  c.qk_norm = fam->qk_norm;
  c.embedding_scale = c.norm_weight_offset = fam->gemma;
  c.sandwich_norm = fam->sandwich_norm;

  resolve_sliding(c, *fam, f);
  c.attn_logit_softcapping = f.optional_number("attn_logit_softcapping").value_or(0.0);
  c.final_logit_softcapping = f.optional_number("final_logit_softcapping").value_or(0.0);
  if (c.attn_logit_softcapping < 0 || c.final_logit_softcapping < 0) f.fail("logit softcapping must be >= 0 or null");
  c.query_pre_attn_scalar = f.optional_number("query_pre_attn_scalar").value_or(static_cast<double>(c.head_dim));
  f.require_positive("query_pre_attn_scalar", c.query_pre_attn_scalar);
  c.clip_qkv = f.optional_number("clip_qkv").value_or(0.0);
  if (c.clip_qkv < 0) f.fail("'clip_qkv' must be positive or null");

  // dtype and special tokens: the text config's, else the wrapper's (gemma3).
  const json empty = json::object();
  const ConfigFields outer_fields(outer ? *outer : empty, empty, source, model_type);
  auto field_or_outer = [&](const char* key) -> const ConfigFields& {
    return (!f.in_config(key) && outer && outer->contains(key)) ? outer_fields : f;
  };
  std::optional<std::string> dtype = field_or_outer("dtype").optional_string("dtype");
  if (!dtype) dtype = field_or_outer("torch_dtype").optional_string("torch_dtype");
  if (dtype) {
    c.torch_dtype = dtype_from_name(*dtype);
    if (!c.torch_dtype) f.fail(concat("unknown torch_dtype '", *dtype, "'"));
  }
  c.bos_token_id = field_or_outer("bos_token_id").optional_integer("bos_token_id");
  c.eos_token_ids = field_or_outer("eos_token_id").integer_list("eos_token_id");
  c.pad_token_id = field_or_outer("pad_token_id").optional_integer("pad_token_id");

  // A wrapper (gemma3) carries the checkpoint's quantization at its top level.
  if (const ConfigFields& q = field_or_outer("quantization_config"); q.find("quantization_config"))
    c.quantization = parse_quantization(*q.find("quantization_config"), f);
  parse_moe(c, *fam, f);
  if (fam->hybrid_linear) parse_linear_attention(c, f);
  if (c.is_moe()) {
    bool any_dense = false;
    for (int64_t i = 0; i < c.num_hidden_layers; ++i) any_dense |= !c.is_moe_layer(i);
    if (any_dense && c.intermediate_size <= 0)
      f.fail("some layers are dense (mlp_only_layers / decoder_sparse_step) but 'intermediate_size' is not given");
  }
  return c;
}

}  // namespace

ModelConfig parse_model_config(std::string_view json_text, std::string_view source) {
  const std::string src(source);
  const json root = safetensors::parse_strict_json(json_text, src, "config");
  if (!root.is_object())
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, src, ": config must be a JSON object, got ", safetensors::json_type_name(root));
  // gemma3 (image-text) nests its language model under "text_config".
  if (root.contains("model_type") && root.at("model_type") == "gemma3") {
    if (!root.contains("text_config") || !root.at("text_config").is_object())
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, src, ": model_type 'gemma3' needs a 'text_config' object");
    json text = root.at("text_config");
    if (!text.contains("model_type")) text["model_type"] = "gemma3_text";
    if (text.at("model_type") != "gemma3_text")
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, src, ": gemma3 text_config has model_type ", text.at("model_type").dump(),
              ", expected \"gemma3_text\"");
    return parse_text_model(text, &root, src + ": text_config");
  }
  // Qwen3-VL nests its language model the same way; the vision tower is models/vlm's.
  if (root.contains("model_type") && root.at("model_type") == "qwen3_vl_moe")
    FK_FAIL(FK_ERR_UNSUPPORTED, src, ": model_type 'qwen3_vl_moe' (Qwen3-VL's MoE text model) is not supported; ",
            "the dense qwen3_vl is");
  if (root.contains("model_type") && root.at("model_type") == "qwen3_vl") {
    if (!root.contains("text_config") || !root.at("text_config").is_object())
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, src, ": model_type 'qwen3_vl' needs a 'text_config' object");
    json text = root.at("text_config");
    if (!text.contains("model_type")) text["model_type"] = "qwen3_vl_text";
    if (text.at("model_type") != "qwen3_vl_text")
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, src, ": qwen3_vl text_config has model_type ", text.at("model_type").dump(),
              ", expected \"qwen3_vl_text\"");
    // The wrapper says whether the head is tied (text_config does not).
    if (!text.contains("tie_word_embeddings") && root.contains("tie_word_embeddings"))
      text["tie_word_embeddings"] = root.at("tie_word_embeddings");
    return parse_text_model(text, &root, src + ": text_config");
  }
  return parse_text_model(root, nullptr, src);
}

ModelConfig load_model_config(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path file = std::filesystem::is_directory(path, ec) ? path / "config.json" : path;
  std::ifstream in(file, std::ios::binary);
  if (!in) FK_FAIL(FK_ERR_INVALID_ARGUMENT, file.string(), ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_model_config(ss.str(), file.string());
}

}  // namespace fk
