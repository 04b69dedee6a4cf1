// The layer ops of DecoderModel: which op covers every layer of the model, if one does, and
// its arguments for a layer of a step (the same buffers the layer's single ops use).
#include <type_traits>
#include <utility>

#include "fk/op_registry.h"
#include "models/llm/decoder_model.h"
#include "runtime/views.h"

namespace fk::engine {

// The engine's per-op path for a model whose layers one layer op covers: the same single ops
// called one by one, to compare the layer op's host and launch cost (and a candidate's layer)
// against. The layer op's CUDA baseline composes those ops, so both compute the same bits.
constexpr const char* kAsParts = "as_parts";
constexpr const char* kAsPartsSummary = "the engine runs each layer as its single ops instead of this layer op";
FK_REGISTER_VARIANT(ops::DecoderLayerArgs::kName, kAsParts, kAsPartsSummary);
FK_REGISTER_VARIANT(ops::MoeLayerArgs::kName, kAsParts, kAsPartsSummary);
FK_REGISTER_VARIANT(ops::GptOssLayerArgs::kName, kAsParts, kAsPartsSummary);

DecoderModel::LayerOp DecoderModel::choose_layer_op() const {
  if (!fuse_norm_linear_ || spec_.qk_norm_across_heads) return LayerOp::none;
  bool decoder = spec_.activation == MlpActivation::silu;
  // Mixtral, Qwen3-MoE: SiLU experts of the model dtype, softmax routing, no shared expert.
  bool moe = !spec_.attention_sinks && !spec_.attention_output_gate && !spec_.moe.swigluoai && !spec_.moe.fp8 &&
             spec_.moe.shared_intermediate == 0;
  // gpt-oss: sinks, biased qkv / o / router / experts, the clamped SwiGLU, 16-bit experts.
  bool gpt_oss = spec_.attention_sinks && spec_.moe.swigluoai && !spec_.moe.fp8 && !spec_.qk_norm;
  for (int64_t l = 0; l < spec_.num_layers(); ++l) {
    const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
    const bool no_cap = spec_.layers[static_cast<size_t>(l)].logits_soft_cap == 0;
    const bool plain_attention = no_cap && !spec_.is_linear_layer(l) && !w.o_bias.defined();
    decoder = decoder && plain_attention && !spec_.is_moe_layer(l) && !w.gate_up_bias.defined() &&
              !w.down_bias.defined();
    moe = moe && plain_attention && spec_.is_moe_layer(l) && !w.router_bias.defined();
    gpt_oss = gpt_oss && no_cap && spec_.is_moe_layer(l) && w.qkv_bias.defined() && w.o_bias.defined() &&
              w.router_bias.defined() && w.sinks.defined();
  }
  const LayerOp op = decoder ? LayerOp::decoder : moe ? LayerOp::moe : gpt_oss ? LayerOp::gpt_oss : LayerOp::none;
  const char* name = op == LayerOp::decoder ? ops::DecoderLayerArgs::kName
                     : op == LayerOp::moe   ? ops::MoeLayerArgs::kName
                                            : ops::GptOssLayerArgs::kName;
  return op != LayerOp::none && OpRegistry::global().variant_on(name, kAsParts) ? LayerOp::none : op;
}

void DecoderModel::layer_op(const ForwardBatch& b, int64_t l, const KvCache& kv, const TensorView& residual,
                            const TensorView& residual_mid, bool plan_only, void* stream) const {
  auto go = [&](const auto& args) {
    using Args = std::decay_t<decltype(args)>;
    if (plan_only)
      OpRegistry::global().plan(Args::kName, backend_, &args, stream);
    else
      call_op(args, backend_, stream);
  };
  if (layer_op_ == LayerOp::gpt_oss)
    go(gpt_oss_layer_args(b, l, kv, residual, residual_mid));
  else if (layer_op_ == LayerOp::moe)
    go(moe_layer_args(b, l, kv, residual, residual_mid));
  else
    go(layer_args(b, l, kv, residual, residual_mid));
}

// The fields every layer op shares (the stream, input norm and QKV, rope, the paged cache
// and the step's batch, the attention workspaces and plan, the attributes).
template <class Args>
void DecoderModel::fill_layer_common(Args& a, const ForwardBatch& b, int64_t l, const KvCache& kv,
                                     const TensorView& residual, const TensorView& residual_mid) const {
  const ModelConfig& c = spec_.config;
  const int64_t T = b.num_tokens;
  const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
  const LayerAttention& la = spec_.layers[static_cast<size_t>(l)];
  const AttentionPlan& p = plans_[static_cast<size_t>(layer_plan_[static_cast<size_t>(l)])];
  a.hidden = rows(a_, T);
  a.residual = residual;
  a.input_norm = w.input_norm;
  a.qkv_weight = w.qkv;
  a.qkv_bias = opt(w.qkv_bias);
  a.o_weight = w.o_proj;
  a.post_attention_norm = w.pre_mlp_norm;
  a.positions = b.positions;
  a.cos_sin_cache = rope_caches_[static_cast<size_t>(la.rope_index)];
  a.k_cache = kv_k(kv, l);
  a.v_cache = kv_v(kv, l);
  a.slot_mapping = b.slot_mapping;
  a.qo_indptr = b.qo_indptr;
  a.kv_indptr = b.kv_indptr;
  a.kv_indices = b.kv_indices;
  a.kv_last_page_len = b.kv_last_page_len;
  a.qo_indptr_host = b.qo_indptr_host;
  a.kv_indptr_host = b.kv_indptr_host;
  a.kv_last_page_len_host = b.kv_last_page_len_host;
  a.normed = rows(b_, T);
  a.residual_mid = residual_mid;
  a.qkv = rows(qkv_, T);
  a.attn_out = rows(attn_out_, T);
  a.float_workspace = p.float_workspace;
  a.int_workspace = p.int_workspace;
  a.host_int_workspace = p.host_int_workspace;
  a.plan_info = p.plan_info;
  a.num_heads = static_cast<int32_t>(c.num_attention_heads);
  a.num_kv_heads = static_cast<int32_t>(c.num_key_value_heads);
  a.head_dim = static_cast<int32_t>(c.head_dim);
  a.rope_style = ops::RopeStyle::neox;
  a.eps = spec_.rms_norm_eps;
  a.sm_scale = spec_.sm_scale;
  a.window_left = la.window_left;
  a.first_layer = l == 0 ? 1 : 0;
  a.cuda_graph = graph_grid_;
}

ops::DecoderLayerArgs DecoderModel::layer_args(const ForwardBatch& b, int64_t l, const KvCache& kv,
                                               const TensorView& residual, const TensorView& residual_mid) const {
  const int64_t T = b.num_tokens, I = spec_.config.intermediate_size;
  const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
  ops::DecoderLayerArgs a{};
  fill_layer_common(a, b, l, kv, residual, residual_mid);
  a.q_norm = spec_.qk_norm ? w.q_norm.view() : absent();
  a.k_norm = spec_.qk_norm ? w.k_norm.view() : absent();
  a.gate_up_weight = w.gate_up;
  a.down_weight = w.down;
  a.gate_up = packed_rows(gate_up_.view(), T, 2 * I);
  a.act = packed_rows(act_.view(), T, I);
  return a;
}

ops::MoeLayerArgs DecoderModel::moe_layer_args(const ForwardBatch& b, int64_t l, const KvCache& kv,
                                              const TensorView& residual, const TensorView& residual_mid) const {
  const int64_t T = b.num_tokens;
  const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
  ops::MoeLayerArgs a{};
  fill_layer_common(a, b, l, kv, residual, residual_mid);
  a.q_norm = spec_.qk_norm ? w.q_norm.view() : absent();
  a.k_norm = spec_.qk_norm ? w.k_norm.view() : absent();
  a.router_weight = w.router;
  a.w13 = w.w13;
  a.w2 = w.w2;
  a.router_logits = rows(router_logits_, T);
  a.topk_weights = rows(topk_weights_, T);
  a.topk_ids = rows(topk_ids_, T);
  a.moe_workspace = moe_workspace_;
  a.renormalize = spec_.moe.renormalize ? 1 : 0;
  return a;
}

ops::GptOssLayerArgs DecoderModel::gpt_oss_layer_args(const ForwardBatch& b, int64_t l, const KvCache& kv,
                                                      const TensorView& residual,
                                                      const TensorView& residual_mid) const {
  const int64_t T = b.num_tokens;
  const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
  ops::GptOssLayerArgs a{};
  fill_layer_common(a, b, l, kv, residual, residual_mid);
  a.sinks = w.sinks;
  a.o_bias = w.o_bias;
  a.router_weight = w.router;
  a.router_bias = w.router_bias;
  a.w13 = w.w13;
  a.w13_bias = w.w13_bias;
  a.w2 = w.w2;
  a.w2_bias = w.w2_bias;
  a.lse = rows(attn_lse_, T);
  a.router_logits = rows(router_logits_, T);
  a.topk_weights = rows(topk_weights_, T);
  a.topk_ids = rows(topk_ids_, T);
  a.moe_workspace = moe_workspace_;
  a.swiglu_alpha = spec_.moe.swiglu_alpha;
  a.swiglu_limit = spec_.moe.swiglu_limit;
  return a;
}

}  // namespace fk::engine
