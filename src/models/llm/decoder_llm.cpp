#include "models/llm/decoder_llm.h"

#include <algorithm>
#include <map>

#include "core/safetensors/safetensors.h"
#include "fk/status.h"
#include "models/llm/fp8_blocks.h"
#include "models/llm/weights.h"

namespace fk::engine {

using models::kPerCall;
using models::TensorDecl;

namespace {

// An fp8 checkpoint's block scales of X.weight: X.weight_scale_inv.
constexpr const char* kScaleSuffix = "_scale_inv";

// The checkpoint's tensors of one spec, in HF's names: what load_checkpoint_weights reads.
class CheckpointTensors {
 public:
  explicit CheckpointTensors(const ModelSpec& spec)
      : spec_(spec), dtype_(spec.config.torch_dtype.value_or(DType::bf16)) {}

  // A tensor in the checkpoint's dtype (norms, embeddings, biases, routers).
  void plain(const std::string& name, std::vector<int64_t> shape) { out_.push_back({name, std::move(shape), dtype_, ""}); }
  // A Linear layer's weight: block fp8 with its scales in an fp8 checkpoint.
  void linear(const std::string& name, int64_t rows, int64_t cols) {
    if (!spec_.fp8_checkpoint) return plain(name, {rows, cols});
    out_.push_back({name, {rows, cols}, DType::f8e4m3fn, ""});
    const Shape grid = fp8_scale_shape({rows, cols});
    out_.push_back({name + kScaleSuffix, {grid[0], grid[1]}, DType::f32, ""});
  }
  // A tensor of another dtype than the checkpoint's (MXFP4 blocks and scales: U8).
  void typed(const std::string& name, std::vector<int64_t> shape, DType dtype) {
    out_.push_back({name, std::move(shape), dtype, ""});
  }
  std::vector<TensorDecl> take() { return std::move(out_); }

 private:
  const ModelSpec& spec_;
  DType dtype_;
  std::vector<TensorDecl> out_;
};

// gpt-oss's MXFP4 experts: `name`_blocks [groups..., 16] and `name`_scales [groups...].
void out_mxfp4(CheckpointTensors& t, const std::string& name, std::vector<int64_t> groups) {
  t.typed(name + "_scales", groups, DType::u8);
  groups.push_back(16);
  t.typed(name + "_blocks", std::move(groups), DType::u8);
}

}  // namespace

DecoderLlm::DecoderLlm(std::string architecture, ModelSpec spec)
    : architecture_(std::move(architecture)), spec_(std::move(spec)) {}

std::unique_ptr<models::Model> DecoderLlm::from_config(std::string architecture, std::string_view config_json,
                                                       std::string_view source) {
  return std::make_unique<DecoderLlm>(std::move(architecture), model_spec_for(parse_model_config(config_json, source)));
}

std::string DecoderLlm::task_category() const {
  if (!spec_.config.mrope_section.empty()) return "multimodal";  // Qwen3-VL's text model
  if (spec_.has_recurrent_state()) return "ssm";
  return spec_.config.is_moe() ? "moe-llm" : "dense-llm";
}

std::vector<TensorDecl> DecoderLlm::weights() const {
  const ModelConfig& c = spec_.config;
  const int64_t H = c.hidden_size, V = c.vocab_size, I = c.intermediate_size, D = c.head_dim;
  const int64_t q = c.q_size(), kv = c.kv_size();
  CheckpointTensors t(spec_);
  const std::string& p = spec_.prefix;
  t.plain(p + "embed_tokens.weight", {V, H});
  for (int64_t l = 0; l < spec_.num_layers(); ++l) {
    const std::string n = concat(p, "layers.", l, ".");
    t.plain(n + "input_layernorm.weight", {H});
    if (spec_.is_linear_layer(l)) {
      const LinearAttentionConfig& la = c.linear_attention;
      t.plain(n + "linear_attn.in_proj_qkvz.weight", {la.conv_dim() + la.value_dim(), H});
      t.plain(n + "linear_attn.in_proj_ba.weight", {2 * la.v_heads, H});
      t.plain(n + "linear_attn.conv1d.weight", {la.conv_dim(), 1, la.conv_kernel});
      t.plain(n + "linear_attn.dt_bias", {la.v_heads});
      t.plain(n + "linear_attn.A_log", {la.v_heads});
      t.plain(n + "linear_attn.norm.weight", {la.v_head_dim});
      t.plain(n + "linear_attn.out_proj.weight", {H, la.value_dim()});
    } else {
    t.linear(n + "self_attn.q_proj.weight", spec_.attention_output_gate ? 2 * q : q, H);
    t.linear(n + "self_attn.k_proj.weight", kv, H);
    t.linear(n + "self_attn.v_proj.weight", kv, H);
    if (spec_.qkv_bias) {
      t.plain(n + "self_attn.q_proj.bias", {q});
      t.plain(n + "self_attn.k_proj.bias", {kv});
      t.plain(n + "self_attn.v_proj.bias", {kv});
    }
    if (spec_.qk_norm) {
      t.plain(n + "self_attn.q_norm.weight", {D});
      t.plain(n + "self_attn.k_norm.weight", {D});
    }
    if (spec_.qk_norm_across_heads) {
      t.plain(n + "self_attn.q_norm.weight", {q});
      t.plain(n + "self_attn.k_norm.weight", {kv});
    }
    t.linear(n + "self_attn.o_proj.weight", H, q);
    if (spec_.o_bias) t.plain(n + "self_attn.o_proj.bias", {H});
    if (spec_.attention_sinks) t.plain(n + "self_attn.sinks", {c.num_attention_heads});
    }
    if (spec_.sandwich_norm) {
      t.plain(n + spec_.post_attn_norm_name + ".weight", {H});
      t.plain(n + spec_.post_mlp_norm_name + ".weight", {H});
    }
    t.plain(n + spec_.pre_mlp_norm_name + ".weight", {H});
    if (spec_.is_moe_layer(l)) {
      // The classic per-expert layout: the first of the names the loader accepts.
      const MoeSpec& m = spec_.moe;
      const std::string block = n + m.module_names.front() + ".";
      const auto& [gate, up, down] = m.expert_weight_names.front();
      if (m.swigluoai) {  // gpt-oss: biased router and experts, stored input-major and fused
        t.plain(block + m.router_name + ".weight", {m.num_experts, H});
        t.plain(block + m.router_name + ".bias", {m.num_experts});
        if (spec_.mxfp4_experts) {  // 4-bit blocks and E8M0 scales of 32 values
          const int64_t E = m.num_experts, Ie = m.intermediate;
          out_mxfp4(t, block + "experts.gate_up_proj", {E, 2 * Ie, H / 32});
          out_mxfp4(t, block + "experts.down_proj", {E, H, Ie / 32});
        } else {
          t.plain(block + "experts.gate_up_proj", {m.num_experts, H, 2 * m.intermediate});
          t.plain(block + "experts.down_proj", {m.num_experts, m.intermediate, H});
        }
        t.plain(block + "experts.gate_up_proj_bias", {m.num_experts, 2 * m.intermediate});
        t.plain(block + "experts.down_proj_bias", {m.num_experts, H});
        continue;
      }
      t.plain(block + "gate.weight", {m.num_experts, H});
      for (int64_t e = 0; e < m.num_experts; ++e) {
        const std::string x = concat(block, "experts.", e, ".");
        t.linear(x + gate + ".weight", m.intermediate, H);
        t.linear(x + up + ".weight", m.intermediate, H);
        t.linear(x + down + ".weight", H, m.intermediate);
      }
      if (m.shared_intermediate > 0) {
        t.linear(block + "shared_expert.gate_proj.weight", m.shared_intermediate, H);
        t.linear(block + "shared_expert.up_proj.weight", m.shared_intermediate, H);
        t.linear(block + "shared_expert.down_proj.weight", H, m.shared_intermediate);
        t.plain(block + "shared_expert_gate.weight", {1, H});
      }
      continue;
    }
    t.linear(n + "mlp.gate_proj.weight", I, H);
    t.linear(n + "mlp.up_proj.weight", I, H);
    t.linear(n + "mlp.down_proj.weight", H, I);
    if (spec_.mlp_bias) {
      t.plain(n + "mlp.gate_proj.bias", {I});
      t.plain(n + "mlp.up_proj.bias", {I});
      t.plain(n + "mlp.down_proj.bias", {H});
    }
  }
  t.plain(p + "norm.weight", {H});
  if (!spec_.tie_word_embeddings) t.plain("lm_head.weight", {V, H});
  return t.take();
}

std::vector<TensorDecl> DecoderLlm::inputs() const {
  return {{"input_ids", {kPerCall}, DType::i32, "the step's tokens, every scheduled sequence's back to back"},
          {"positions", {kPerCall}, DType::i64, "each token's position in its sequence"},
          {"slot_mapping", {kPerCall}, DType::i64, "each token's KV slot: page * page_size + offset"},
          {"logits_indices", {kPerCall}, DType::i32, "the token rows whose logits are wanted"},
          {"qo_indptr", {kPerCall}, DType::i32, "[sequences + 1]: where each sequence's tokens start"},
          {"kv_indptr", {kPerCall}, DType::i32, "[sequences + 1]: where each sequence's pages start in kv_indices"},
          {"kv_indices", {kPerCall}, DType::i32, "the KV pages of every sequence"},
          {"kv_last_page_len", {kPerCall}, DType::i32, "[sequences]: tokens in each sequence's last page"}};
}

std::vector<TensorDecl> DecoderLlm::outputs() const {
  const DType t = model_ ? model_->dtype() : DType::bf16;
  return {{"logits", {kPerCall, spec_.config.vocab_size}, t, "next-token logits of the logits_indices rows"}};
}

// One paged-KV group per attention window: full layers, and sliding layers of each window;
// Qwen3-Next's linear-attention layers: one recurrent-slot group (conv + delta-rule state).
std::vector<runtime::StateSpec> DecoderLlm::state() const {
  const ModelConfig& c = spec_.config;
  std::map<int32_t, runtime::StateSpec> by_window;
  for (int64_t l = 0; l < spec_.num_layers(); ++l) {
    if (spec_.is_linear_layer(l)) continue;
    const int32_t w = spec_.layers[static_cast<size_t>(l)].window_left;
    auto [it, fresh] = by_window.try_emplace(w);
    runtime::StateSpec& s = it->second;
    if (fresh) {
      s.group = w < 0 ? "attention" : concat("sliding_attention_", w + 1);
      s.kind = runtime::StateKind::paged_kv;
      s.kv_heads = c.num_key_value_heads;
      s.head_dim = c.head_dim;
      s.dtype = model_ ? model_->dtype() : DType::bf16;
      s.sliding_window = w < 0 ? 0 : w + 1;
    }
    s.layers.push_back(l);
  }
  std::vector<runtime::StateSpec> out;
  for (auto& [w, s] : by_window) out.push_back(std::move(s));
  if (spec_.has_recurrent_state())
    out.push_back(DecoderModel::state_spec(spec_, model_ ? model_->dtype() : DType::bf16));
  return out;
}

void DecoderLlm::load(const models::LoadOptions& o) {
  ModelWeights w = o.checkpoint.empty()
                       ? dummy_weights(spec_, o.dtype, o.device, o.seed, o.stream)
                       : load_checkpoint_weights(spec_, safetensors::Checkpoint::open(o.checkpoint), o.dtype, o.device,
                                                 o.stream);
  const int64_t max_position = o.max_position > 0 ? o.max_position : spec_.config.max_position_embeddings;
  model_ = std::make_unique<DecoderModel>(spec_, std::move(w), o.device, std::max(o.max_tokens, o.max_seqs), o.max_seqs,
                                          std::max(o.max_tokens, o.max_seqs), max_position, o.stream);
}

DecoderModel& DecoderLlm::running(const models::StepInputs& in) const {
  FK_CHECK(model_, "model '", architecture_, "': load() it before running a step");
  FK_CHECK(in.batch && in.kv, "model '", architecture_, "': a Generate step needs its packed batch and its KV cache");
  return *model_;
}

void DecoderLlm::plan(const models::StepInputs& in, void* stream) {
  running(in).plan(*in.batch, *in.kv, in.graph_grid, stream);
}

TensorView DecoderLlm::forward(const models::StepInputs& in, void* stream) {
  return running(in).forward(*in.batch, *in.kv, stream);
}

}  // namespace fk::engine
