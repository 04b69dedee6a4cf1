#include "models/llm/decoder_model.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "runtime/views.h"
#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/attention.h"
#include "fk/ops/attention_sink.h"
#include "fk/ops/embedding.h"
#include "fk/ops/kv_cache.h"
#include "fk/ops/linear.h"
#include "fk/ops/mrope.h"
#include "fk/ops/moe.h"
#include "fk/ops/moe_swigluoai.h"
#include "fk/ops/norm.h"
#include "fk/ops/rope.h"
#include "fk/ops/gdn_layer.h"
#include "fk/ops/ssm_gating.h"
#include "fk/runtime.h"
#include "fk/rope_cache.h"
#include "fk/status.h"

namespace fk::engine {

DecoderModel::DecoderModel(ModelSpec spec, ModelWeights weights, Device device, int64_t max_tokens, int64_t max_seqs,
                           int64_t max_logits, int64_t max_position, void* stream)
    : spec_(std::move(spec)), weights_(std::move(weights)), device_(device), dtype_(weights_.embed.dtype()),
      backend_(device.type) {
  FK_CHECK(max_tokens > 0 && max_seqs > 0 && max_logits > 0 && max_position > 0,
           "DecoderModel: step limits must be positive");
  const ModelConfig& c = spec_.config;
  const int64_t H = c.hidden_size, I = c.intermediate_size, D = c.head_dim;
  for (const RopeConfig& r : spec_.ropes)
    rope_caches_.push_back(make_rope_cos_sin_cache(r, max_position, c.rotary_dim(), DType::f32, device, stream));

  // Attention variants: layers with the same window and soft-cap share one plan per step.
  std::vector<std::pair<int32_t, float>> variants;
  for (const LayerAttention& la : spec_.layers) {
    if (la.linear) {  // no attention, no plan
      layer_plan_.push_back(-1);
      continue;
    }
    std::pair<int32_t, float> v{la.window_left, la.logits_soft_cap};
    auto it = std::find(variants.begin(), variants.end(), v);
    if (it == variants.end()) {
      variants.push_back(v);
      it = variants.end() - 1;
    }
    layer_plan_.push_back(static_cast<int>(it - variants.begin()));
  }
  // The prefill plans' float workspace also holds the contiguous-KV copy of a step whose
  // KV spans up to twice the token budget (a prompt and as long a cached prefix, or
  // chunks of a long one); past that, prefill gathers from the pages (contiguous_kv_policy.h).
  const int64_t kv_rows = D == 128 ? 2 * max_tokens : 0;
  const auto prefill_ws = ops::paged_attention_workspace_bytes(max_seqs, max_tokens, c.num_attention_heads,
                                                              c.num_key_value_heads, D, kv_rows);
  const auto ws = ops::paged_attention_workspace_bytes(max_seqs, max_tokens, c.num_attention_heads,
                                                      c.num_key_value_heads, D);
  const bool cpu = device.is_cpu();  // the CPU implementation has no plan and needs no scratch
  auto make_plan = [&](const ops::PagedAttentionWorkspaceBytes& ws) {
    AttentionPlan p;
    p.float_workspace = Tensor::empty({cpu ? 16 : ws.float_bytes}, DType::u8, device, stream);
    p.int_workspace = Tensor::empty({cpu ? 16 : ws.int_bytes}, DType::u8, device, stream);
    // Pinned: every plan uploads its work partition from here, and from pageable memory
    // that copy would block the host.
    p.host_int_workspace = cpu ? Tensor::empty({16}, DType::u8) : Tensor::empty_pinned({ws.int_bytes}, DType::u8);
    p.plan_info = Tensor::zeros({ops::kAttentionPlanInfoLen}, DType::i64);
    return p;
  };
  for (size_t i = 0; i < variants.size(); ++i) {
    plans_.push_back(make_plan(prefill_ws));
    decode_part_plans_.push_back(make_plan(ws));
  }

  auto buffer = [&](int64_t rows, int64_t cols) { return Tensor::empty({rows, cols}, dtype_, device, stream); };
  residual_ = buffer(max_tokens, H);
  fuse_norm_linear_ = spec_.norm == NormKind::rms && !spec_.sandwich_norm;
  if (fuse_norm_linear_) residual_alt_ = buffer(max_tokens, H);
  layer_op_ = choose_layer_op();
  a_ = buffer(max_tokens, H);
  b_ = buffer(max_tokens, H);
  qkv_ = buffer(max_tokens, spec_.qkv_rows());
  attn_out_ = buffer(max_tokens, c.q_size());
  // The dense MLP's buffers only when some layer is dense (Qwen3-MoE configs name an
  // intermediate_size none of their layers uses); a shared expert uses them too, as packed
  // [T, 2Is] and [T, Is] matrices (packed_rows), so they are as wide as the wider of the two.
  bool any_dense = false;
  for (int64_t l = 0; l < spec_.num_layers(); ++l) any_dense |= !spec_.is_moe_layer(l);
  const int64_t Is = spec_.moe.enabled ? spec_.moe.shared_intermediate : 0;
  const int64_t mlp_width = std::max(any_dense ? I : 0, Is);
  gate_up_ = buffer(max_tokens, 2 * mlp_width);
  act_ = buffer(max_tokens, mlp_width);
  head_in_ = buffer(max_logits, H);
  logits_ = buffer(max_logits, c.vocab_size);
  if (spec_.moe.enabled) {
    const int64_t E = spec_.moe.num_experts, k = spec_.moe.top_k;
    router_logits_ = buffer(max_tokens, E);
    topk_weights_ = Tensor::empty({max_tokens, k}, DType::f32, device, stream);
    topk_ids_ = Tensor::empty({max_tokens, k}, DType::i32, device, stream);
    // The CPU implementation needs no scratch; the CUDA one needs the same for fp8 experts
    // (their tiled path uses the regions the 16-bit paths do).
    const int64_t ws = cpu                    ? 16
                       : spec_.moe.swigluoai ? ops::fused_experts_swigluoai_workspace_bytes(max_tokens, k, spec_.moe.intermediate)
                                              : ops::fused_experts_workspace_bytes(max_tokens, k, E, H, spec_.moe.intermediate);
    moe_workspace_ = Tensor::empty({ws}, DType::u8, device, stream);
    if (Is > 0) {
      shared_out_ = buffer(max_tokens, H);
      shared_gate_ = buffer(max_tokens, 1);
    }
  }
  if (spec_.qk_norm_across_heads) {
    q_normed_ = buffer(max_tokens, c.q_size());
    k_normed_ = buffer(max_tokens, c.kv_size());
  }
  if (spec_.attention_output_gate) attn_gated_ = buffer(max_tokens, c.q_size());
  if (spec_.attention_sinks) attn_lse_ = Tensor::empty({max_tokens, c.num_attention_heads}, DType::f32, device, stream);
  if (!c.mrope_section.empty()) zero_positions_ = Tensor::zeros({max_tokens}, DType::i64, device, stream);
  if (spec_.has_recurrent_state()) {
    const LinearAttentionConfig& la = c.linear_attention;
    lin_proj_ = buffer(max_tokens, la.conv_dim() + 2 * la.v_heads);
    lin_z_ = buffer(max_tokens, la.value_dim());
    conv_out_ = buffer(max_tokens, la.conv_dim());
    gdn_g_ = Tensor::empty({max_tokens, la.v_heads}, DType::f32, device, stream);
    gdn_beta_ = buffer(max_tokens, la.v_heads);
    core_out_ = buffer(max_tokens, la.value_dim());
    core_normed_ = buffer(max_tokens, la.value_dim());
  }
}

runtime::StateSpec DecoderModel::state_spec(const ModelSpec& spec, DType dtype) {
  const LinearAttentionConfig& la = spec.config.linear_attention;
  runtime::StateSpec s;
  s.group = "linear_attention";
  s.kind = runtime::StateKind::recurrent_slot;
  for (int64_t l = 0; l < spec.num_layers(); ++l)
    if (spec.is_linear_layer(l)) s.layers.push_back(l);
  s.slot_tensors = {{"conv", {la.conv_dim(), la.conv_kernel - 1}, dtype},
                    {"ssm", {la.v_heads, la.k_head_dim, la.v_head_dim}, DType::f32}};
  for (const runtime::StateTensor& t : s.slot_tensors) s.slot_bytes_per_layer += t.bytes();
  return s;
}

int64_t DecoderModel::activation_bytes() const {
  int64_t b = 0;
  for (const Tensor* t : {&residual_, &residual_alt_, &a_, &b_, &qkv_, &attn_out_, &gate_up_, &act_, &head_in_, &logits_,
                          &router_logits_, &topk_weights_, &topk_ids_, &moe_workspace_, &q_normed_, &k_normed_,
                          &shared_out_, &shared_gate_, &attn_gated_, &lin_proj_, &lin_z_, &conv_out_, &gdn_g_,
                          &gdn_beta_, &core_out_, &core_normed_, &attn_lse_})
    if (t->defined()) b += static_cast<int64_t>(t->nbytes());
  for (const auto* set : {&plans_, &decode_part_plans_})
    for (const AttentionPlan& p : *set) b += static_cast<int64_t>(p.float_workspace.nbytes() + p.int_workspace.nbytes());
  return b;
}

TensorView DecoderModel::rows(const Tensor& buffer, int64_t n) const { return first_rows(buffer.view(), n); }

void DecoderModel::norm(const TensorView& out, const TensorView& in, const Tensor& w, void* stream) const {
  if (spec_.norm == NormKind::gemma_rms)
    call_op(ops::GemmaRmsNormArgs{out, in, w, spec_.rms_norm_eps}, backend_, stream);
  else
    call_op(ops::RmsNormArgs{out, in, w, spec_.rms_norm_eps}, backend_, stream);
}

void DecoderModel::add_norm(const TensorView& x, const TensorView& residual, const Tensor& w, void* stream) const {
  if (spec_.norm == NormKind::gemma_rms)
    call_op(ops::GemmaFusedAddRmsNormArgs{x, residual, w, spec_.rms_norm_eps}, backend_, stream);
  else
    call_op(ops::FusedAddRmsNormArgs{x, residual, w, spec_.rms_norm_eps}, backend_, stream);
}

void DecoderModel::linear(const TensorView& out, const TensorView& in, const Tensor& w, const Tensor& bias,
                          void* stream) const {
  call_op(ops::LinearArgs{out, in, w, opt(bias), absent(), absent()}, backend_, stream);
}

void DecoderModel::norm_linear(const TensorView& out, const TensorView& normed, const TensorView& residual_out,
                               const TensorView& input, const TensorView& residual_in, const Tensor& norm_w,
                               const Tensor& w, const Tensor& bias, void* stream) const {
  call_op(ops::RmsNormLinearArgs{out, normed, residual_out, input, residual_in, norm_w, w, opt(bias),
                                 spec_.rms_norm_eps},
          backend_, stream);
}

void DecoderModel::moe_mlp(const TensorView& out, const TensorView& in, const LayerWeights& w, bool router_done,
                           void* stream) const {
  const int64_t T = in.shape[0];
  const TensorView logits = rows(router_logits_, T), weights = rows(topk_weights_, T), ids = rows(topk_ids_, T);
  if (!router_done) linear(logits, in, w.router, w.router_bias, stream);
  if (spec_.moe.swigluoai) {
    // gpt-oss: softmax over the top-k logits (the renormalised top-k), then its biased
    // experts with the clamped SwiGLU.
    call_op(ops::MoeTopkSoftmaxArgs{weights, ids, logits, 1}, backend_, stream);
    call_op(ops::FusedExpertsSwigluOaiArgs{out, in, w.w13, w.w13_bias, w.w2, w.w2_bias, weights, ids, moe_workspace_,
                                           spec_.moe.swiglu_alpha, spec_.moe.swiglu_limit},
            backend_, stream);
    return;
  }
  // Routing and experts in one op (vLLM's fused_moe; the registry runs it as its two parts
  // when either has a candidate). fp8 experts (spec_.moe.fp8) bring their block scales;
  // 16-bit ones have none.
  const int32_t renormalize = spec_.moe.renormalize ? 1 : 0;
  call_op(ops::FusedMoeArgs{out, in, w.w13, w.w2, opt(w.w13_scale), opt(w.w2_scale), logits, weights, ids,
                            moe_workspace_, renormalize},
          backend_, stream);
  if (spec_.moe.shared_intermediate > 0) shared_expert(out, in, w, stream);
}

void DecoderModel::shared_expert(const TensorView& out, const TensorView& in, const LayerWeights& w,
                                 void* stream) const {
  const int64_t T = in.shape[0], Is = spec_.moe.shared_intermediate;
  const TensorView gate_up = packed_rows(gate_up_.view(), T, 2 * Is), act = packed_rows(act_.view(), T, Is);
  const TensorView y = rows(shared_out_, T), gate = rows(shared_gate_, T);
  // The expert: a SwiGLU MLP like a dense layer's, of width Is.
  linear(gate_up, in, w.shared_gate_up, Tensor{}, stream);
  call_op(ops::SiluAndMulArgs{act, gate_up}, backend_, stream);
  linear(y, act, w.shared_down, Tensor{}, stream);
  // Its gate logit, x . w, is a linear layer with one output feature: every implementation
  // of linear takes N = 1 (its test workloads include such columns).
  linear(gate, in, w.shared_gate, Tensor{}, stream);
  call_op(ops::SigmoidGatedAddArgs{out, y, gate}, backend_, stream);
}

namespace {

// The attention op's arguments for one layer; plan and run see exactly the same ones.
template <class Args>
Args attention_args(const ForwardBatch& b, const TensorView& q, const TensorView& out, const TensorView& lse,
                    const TensorView& k_cache, const TensorView& v_cache, const Tensor& float_ws, const Tensor& int_ws,
                    const Tensor& host_int_ws, const Tensor& plan_info, float sm_scale, const LayerAttention& la,
                    int32_t graph_grid) {
  Args a{};
  a.out = out;
  a.lse = lse;
  a.q = q;
  a.k_cache = k_cache;
  a.v_cache = v_cache;
  a.kv_indptr = b.kv_indptr;
  a.kv_indices = b.kv_indices;
  a.kv_last_page_len = b.kv_last_page_len;
  a.kv_indptr_host = b.kv_indptr_host;
  a.kv_last_page_len_host = b.kv_last_page_len_host;
  a.float_workspace = float_ws;
  a.int_workspace = int_ws;
  a.host_int_workspace = host_int_ws;
  a.plan_info = plan_info;
  a.sm_scale = sm_scale;
  a.logits_soft_cap = la.logits_soft_cap;
  a.window_left = la.window_left;
  a.cuda_graph = graph_grid;
  if constexpr (std::is_same_v<Args, ops::BatchPrefillPagedAttentionArgs>) {
    a.qo_indptr = b.qo_indptr;
    a.qo_indptr_host = b.qo_indptr_host;
    a.causal = 1;
  }
  return a;
}

}  // namespace

void DecoderModel::attention(const ForwardBatch& b, int64_t layer, const TensorView& q, const KvCache& kv,
                             const TensorView& out, bool plan_only, void* stream) {
  const LayerAttention& la = spec_.layers[static_cast<size_t>(layer)];
  const AttentionPlan& p = plans_[static_cast<size_t>(layer_plan_[static_cast<size_t>(layer)])];
  auto go = [&](const auto& args) {
    using Args = std::decay_t<decltype(args)>;
    if (plan_only)
      OpRegistry::global().plan(Args::kName, backend_, &args, stream);
    else
      call_op(args, backend_, stream);
  };
  // gpt-oss: the rows' log-sum-exps, for the sinks (attention_block).
  const TensorView lse = spec_.attention_sinks ? rows(attn_lse_, q.shape[0]) : absent();
  if (b.decode_only) {
    go(attention_args<ops::BatchDecodePagedAttentionArgs>(b, q, out, lse, kv_k(kv, layer), kv_v(kv, layer), p.float_workspace,
                                                          p.int_workspace, p.host_int_workspace, p.plan_info,
                                                          spec_.sm_scale, la, graph_grid_));
    return;
  }
  if (b.num_decode_seqs == 0) {
    go(attention_args<ops::BatchPrefillPagedAttentionArgs>(b, q, out, lse, kv_k(kv, layer), kv_v(kv, layer), p.float_workspace,
                                                           p.int_workspace, p.host_int_workspace, p.plan_info,
                                                           spec_.sm_scale, la, graph_grid_));
    return;
  }
  // A split mixed step: sequences [0, D) (tokens [0, D)) through the decode kernel, the
  // rest through the prefill kernel, each as a batch of its own with its own plan.
  const int64_t D = b.num_decode_seqs, T = q.shape[0];
  const AttentionPlan& dp = decode_part_plans_[static_cast<size_t>(layer_plan_[static_cast<size_t>(layer)])];
  ForwardBatch decode_part = b;
  decode_part.num_seqs = D;
  decode_part.kv_indptr = first_rows(b.kv_indptr, D + 1);
  decode_part.kv_last_page_len = first_rows(b.kv_last_page_len, D);
  decode_part.kv_indptr_host = first_rows(b.kv_indptr_host, D + 1);
  decode_part.kv_last_page_len_host = first_rows(b.kv_last_page_len_host, D);
  go(attention_args<ops::BatchDecodePagedAttentionArgs>(decode_part, first_rows(q, D), first_rows(out, D),
                                                        spec_.attention_sinks ? first_rows(lse, D) : absent(), kv_k(kv, layer),
                                                        kv_v(kv, layer), dp.float_workspace, dp.int_workspace,
                                                        dp.host_int_workspace, dp.plan_info, spec_.sm_scale, la,
                                                        /*graph_grid=*/0));
  ForwardBatch prefill_part = b;
  prefill_part.num_seqs = b.num_seqs - D;
  prefill_part.qo_indptr = b.prefill_qo_indptr;
  prefill_part.kv_indptr = b.prefill_kv_indptr;
  prefill_part.kv_indices = b.prefill_kv_indices;
  prefill_part.kv_last_page_len = b.prefill_kv_last_page_len;
  prefill_part.qo_indptr_host = b.prefill_qo_indptr_host;
  prefill_part.kv_indptr_host = b.prefill_kv_indptr_host;
  prefill_part.kv_last_page_len_host = b.prefill_kv_last_page_len_host;
  go(attention_args<ops::BatchPrefillPagedAttentionArgs>(prefill_part, row_range(q, D, T - D), row_range(out, D, T - D),
                                                         spec_.attention_sinks ? row_range(lse, D, T - D) : absent(),
                                                         kv_k(kv, layer), kv_v(kv, layer), p.float_workspace, p.int_workspace,
                                                         p.host_int_workspace, p.plan_info, spec_.sm_scale, la,
                                                         /*graph_grid=*/0));
}

TensorView DecoderModel::query_view(int64_t tokens) const {
  const ModelConfig& c = spec_.config;
  if (spec_.qk_norm_across_heads) return as_heads(rows(q_normed_, tokens), c.num_attention_heads, c.head_dim);
  return as_heads(columns(rows(qkv_, tokens), 0, c.q_size()), c.num_attention_heads, c.head_dim);
}

bool DecoderModel::runs_layer_op(const ForwardBatch& b) const {
  // The layer op rotates by 1-D positions and takes no image features.
  return layer_op_ != LayerOp::none && (b.decode_only || b.num_decode_seqs == 0) && b.mrope_positions.data == nullptr &&
         b.image_features == nullptr;
}

void DecoderModel::plan(const ForwardBatch& b, const KvCache& kv, int32_t graph_grid, void* stream) {
  FK_CHECK(graph_grid == 0 || (b.decode_only && graph_grid >= 1 && graph_grid <= ops::kDecodeGraphGrids),
           "plan: graph_grid ", graph_grid, " needs a decode-only batch and a class in [1, ", ops::kDecodeGraphGrids,
           "]");
  graph_grid_ = graph_grid;
  if (backend_ == DeviceType::cpu) return;  // the CPU implementation has no plan
  const ModelConfig& c = spec_.config;
  const TensorView out = as_heads(rows(attn_out_, b.num_tokens), c.num_attention_heads, c.head_dim);
  // One plan per variant, made with the arguments of the first layer that uses it (all its
  // layers have the same shapes and attributes; only the caches differ): the layer op's
  // plan where the step runs whole layers (a candidate for the op may bring its own).
  for (size_t i = 0; i < plans_.size(); ++i) {
    const auto first = std::find(layer_plan_.begin(), layer_plan_.end(), static_cast<int>(i)) - layer_plan_.begin();
    if (runs_layer_op(b)) {
      layer_op(b, first, kv, rows(residual_, b.num_tokens), rows(residual_alt_, b.num_tokens), /*plan_only=*/true,
               stream);
    } else {
      attention(b, first, query_view(b.num_tokens), kv, out, /*plan_only=*/true, stream);
    }
  }
}

void DecoderModel::attention_block(const ForwardBatch& b, int64_t l, const KvCache& kv, void* stream) {
  const ModelConfig& c = spec_.config;
  const int64_t T = b.num_tokens;
  const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
  const TensorView qkv = rows(qkv_, T), q = query_view(T);
  // OLMoE normalises q and k over the whole projection into buffers of their own.
  const TensorView k = spec_.qk_norm_across_heads
                           ? as_heads(rows(k_normed_, T), c.num_key_value_heads, c.head_dim)
                           : as_heads(columns(qkv, c.q_size(), c.kv_size()), c.num_key_value_heads, c.head_dim);
  const TensorView v = as_heads(columns(qkv, c.q_size() + c.kv_size(), c.kv_size()), c.num_key_value_heads, c.head_dim);
  const LayerAttention& la = spec_.layers[static_cast<size_t>(l)];
  const Tensor& cos_sin = rope_caches_[static_cast<size_t>(la.rope_index)];
  if (spec_.qk_norm_across_heads) {
    call_op(ops::RmsNormArgs{rows(q_normed_, T), columns(qkv, 0, c.q_size()), w.q_norm, spec_.rms_norm_eps}, backend_,
            stream);
    call_op(ops::RmsNormArgs{rows(k_normed_, T), columns(qkv, c.q_size(), c.kv_size()), w.k_norm, spec_.rms_norm_eps},
            backend_, stream);
  }
  // Rope (after the per-head q/k norms where the model has them) and the KV-cache write in
  // one op (the registry runs it as the two ops when either has a candidate, or with the
  // variant rope_and_cache=unfused for A/B runs).
  const int32_t D = static_cast<int32_t>(c.head_dim);
  if (b.mrope_positions.data != nullptr) {
    mrope_and_cache(b, l, q, k, v, kv, stream);
  } else {
  call_op(ops::RopeAndCacheArgs{b.positions, q, k, v, spec_.qk_norm ? w.q_norm.view() : absent(),
                                spec_.qk_norm ? w.k_norm.view() : absent(), cos_sin, kv_k(kv, l), kv_v(kv, l), b.slot_mapping,
                                D, ops::RopeStyle::neox, spec_.rms_norm_eps},
          backend_, stream);
  }
  const TensorView out = as_heads(rows(attn_out_, T), c.num_attention_heads, c.head_dim);
  attention(b, l, q, kv, out, /*plan_only=*/false, stream);
  // gpt-oss: each head's sink logit joins the softmax denominator, from the rows' lse.
  if (spec_.attention_sinks) call_op(ops::AttentionSinkRescaleArgs{out, rows(attn_lse_, T), w.sinks}, backend_, stream);
}

void DecoderModel::mrope_and_cache(const ForwardBatch& b, int64_t l, const TensorView& q, const TensorView& k,
                                   const TensorView& v, const KvCache& kv, void* stream) {
  const ModelConfig& c = spec_.config;
  FK_CHECK(!c.mrope_section.empty() && zero_positions_.defined(), "forward: model '", c.model_type,
           "' has no M-RoPE, but the batch carries mrope_positions");
  FK_CHECK(b.mrope_positions.rank == 2 && b.mrope_positions.shape[0] == 3 && b.mrope_positions.shape[1] == b.num_tokens,
           "forward: mrope_positions must be [3, ", b.num_tokens, "], got ", describe(b.mrope_positions));
  const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
  const Tensor& cos_sin = rope_caches_[static_cast<size_t>(spec_.layers[static_cast<size_t>(l)].rope_index)];
  const int32_t D = static_cast<int32_t>(c.head_dim);
  if (spec_.qk_norm)  // the norms alone: a rotation at position 0 is the identity
    call_op(ops::QkNormRopeArgs{rows(zero_positions_, b.num_tokens), q, k, w.q_norm, w.k_norm, cos_sin, D,
                                ops::RopeStyle::neox, spec_.rms_norm_eps},
            backend_, stream);
  ops::MropeRotaryEmbeddingArgs m{b.mrope_positions, q, k, cos_sin, D, {}, c.mrope_interleaved ? 1 : 0};
  for (int i = 0; i < 3; ++i) m.mrope_section[i] = static_cast<int32_t>(c.mrope_section[static_cast<size_t>(i)]);
  call_op(m, backend_, stream);
  call_op(ops::ReshapeAndCacheArgs{k, v, kv_k(kv, l), kv_v(kv, l), b.slot_mapping, absent(), absent()}, backend_,
          stream);
}

void DecoderModel::fused_norm_layer(const ForwardBatch& b, int64_t l, const KvCache& kv, TensorView& residual,
                                    TensorView& residual_next, void* stream) {
  const ModelConfig& c = spec_.config;
  const int64_t T = b.num_tokens;
  const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
  // The layer's input is in x (the previous layer's output), or, in the first layer, is the
  // embedding in `residual` itself; each norm writes its rows to y for whoever reads them
  // after the linear layer it feeds.
  const TensorView x = rows(a_, T), y = rows(b_, T), qkv = rows(qkv_, T);
  if (l == 0) {
    norm_linear(qkv, y, absent(), residual, absent(), w.input_norm, w.qkv, w.qkv_bias, stream);
  } else {
    norm_linear(qkv, y, residual_next, x, residual, w.input_norm, w.qkv, w.qkv_bias, stream);
    std::swap(residual, residual_next);
  }
  attention_block(b, l, kv, stream);
  linear(x, rows(attn_out_, T), w.o_proj, w.o_bias, stream);

  if (spec_.is_moe_layer(l)) {
    norm_linear(rows(router_logits_, T), y, residual_next, x, residual, w.pre_mlp_norm, w.router, w.router_bias, stream);
    std::swap(residual, residual_next);
    moe_mlp(x, y, w, /*router_done=*/true, stream);
    return;
  }
  const TensorView gate_up = packed_rows(gate_up_.view(), T, 2 * c.intermediate_size),
                   act = packed_rows(act_.view(), T, c.intermediate_size);
  norm_linear(gate_up, y, residual_next, x, residual, w.pre_mlp_norm, w.gate_up, w.gate_up_bias, stream);
  std::swap(residual, residual_next);
  activation(act, gate_up, stream);
  linear(x, act, w.down, w.down_bias, stream);
}

void DecoderModel::separate_norm_layer(const ForwardBatch& b, int64_t l, const KvCache& kv, TensorView& residual,
                                       void* stream) {
  const ModelConfig& c = spec_.config;
  const int64_t T = b.num_tokens;
  const TensorView x = rows(a_, T), y = rows(b_, T);
  const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
  // x = norm(residual); from the second layer on, the previous layer's output (in x) is
  // added to the residual first, in the same op.
  if (l == 0)
    norm(x, residual, w.input_norm, stream);
  else
    add_norm(x, residual, w.input_norm, stream);

  // Attention: fused QKV GEMM, rope (with the q/k norms where the model has them), cache
  // write, paged attention, output projection; Qwen3-Next gates the attention output by
  // sigmoid(gate) first. Its linear-attention layers: the gated DeltaNet.
  if (spec_.is_linear_layer(l)) {
    linear_attention(b, l, x, y, stream);
  } else {
    linear(rows(qkv_, T), x, w.qkv, w.qkv_bias, stream);
    attention_block(b, l, kv, stream);
    TensorView attn = rows(attn_out_, T);
    if (spec_.attention_output_gate) {
      const TensorView gate = columns(rows(qkv_, T), c.q_size() + 2 * c.kv_size(), c.q_size());
      call_op(ops::SigmoidMulArgs{rows(attn_gated_, T), attn, gate}, backend_, stream);
      attn = rows(attn_gated_, T);
    }
    linear(y, attn, w.o_proj, w.o_bias, stream);
  }

  // MLP, with Gemma's extra norms around it: the sub-layer outputs are normalised before
  // they are added to the residual.
  TensorView mlp_in = y;
  if (spec_.sandwich_norm) {
    norm(x, y, w.post_attn_norm, stream);
    mlp_in = x;
  }
  add_norm(mlp_in, residual, w.pre_mlp_norm, stream);
  const TensorView mlp_out = mlp_in.data == x.data ? y : x;
  if (spec_.is_moe_layer(l)) {
    moe_mlp(mlp_out, mlp_in, w, /*router_done=*/false, stream);
  } else {
    const TensorView gate_up = packed_rows(gate_up_.view(), T, 2 * c.intermediate_size),
                     act = packed_rows(act_.view(), T, c.intermediate_size);
    linear(gate_up, mlp_in, w.gate_up, w.gate_up_bias, stream);
    activation(act, gate_up, stream);
    linear(mlp_out, act, w.down, w.down_bias, stream);
  }
  if (spec_.sandwich_norm)
    norm(x, mlp_out, w.post_mlp_norm, stream);
  else if (mlp_out.data != x.data)
    FK_FAIL(FK_ERR_INTERNAL, "forward: the layer output must end in the x buffer");
}

// The gated DeltaNet sub-layer is one op (gdn_layer: its baseline calls the parts, each
// replaceable by a candidate). The states are the pool's "conv" and "ssm" tensors of this
// layer: slots a whole slot apart (every linear layer's conv and delta state), which the
// parts take as their slot stride, indexed by the batch's state slots on the device (nothing
// read on the host: a decode step can be captured in a CUDA graph; a padding sequence's slot
// -1 reads zeros and writes nothing).
void DecoderModel::linear_attention(const ForwardBatch& b, int64_t l, const TensorView& x, const TensorView& y,
                                    void* stream) {
  FK_CHECK(state_pool_ != nullptr, "forward: model '", spec_.config.model_type,
           "' has linear-attention layers but no recurrent state pool was given (set_state_pool)");
  FK_CHECK(b.state_indices.data != nullptr, "forward: model '",
           spec_.config.model_type, "' needs the batch's recurrent state slots (ForwardBatch::state_indices)");
  const LinearAttentionConfig& la = spec_.config.linear_attention;
  const int64_t T = b.num_tokens, Hv = la.v_heads, vd = la.value_dim(), cd = la.conv_dim();
  const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
  ops::GdnLayerArgs a{};
  a.out = y;
  a.hidden = x;
  a.in_proj = w.lin_in;
  a.z_proj = w.lin_z;
  a.conv_weight = w.conv_w;
  a.a_log = w.a_log;
  a.dt_bias = w.dt_bias;
  a.norm_weight = w.lin_norm;
  a.out_proj = w.lin_out;
  a.conv_state = state_pool_->layer_state(l, 0);
  a.ssm_state = state_pool_->layer_state(l, 1);
  a.cu_seqlens = b.qo_indptr;
  a.state_indices = b.state_indices;
  a.has_initial_state = b.has_initial_state;
  a.has_initial_state_bool = b.has_initial_state_bool;
  a.proj = packed_rows(lin_proj_.view(), T, cd + 2 * Hv);
  a.z = packed_rows(lin_z_.view(), T, vd);
  a.mixed = packed_rows(conv_out_.view(), T, cd);
  a.g = packed_rows(gdn_g_.view(), T, Hv);
  a.beta = packed_rows(gdn_beta_.view(), T, Hv);
  a.core = packed_rows(core_out_.view(), T, vd);
  a.core_normed = packed_rows(core_normed_.view(), T, vd);
  a.eps = spec_.rms_norm_eps;
  a.decode = b.decode_only ? 1 : 0;
  call_op(a, backend_, stream);
}

void DecoderModel::activation(const TensorView& act, const TensorView& gate_up, void* stream) const {
  switch (spec_.activation) {
    case MlpActivation::silu: call_op(ops::SiluAndMulArgs{act, gate_up}, backend_, stream); break;
    case MlpActivation::gelu: call_op(ops::GeluAndMulArgs{act, gate_up, ops::GeluApprox::none}, backend_, stream); break;
    case MlpActivation::gelu_tanh:
      call_op(ops::GeluAndMulArgs{act, gate_up, ops::GeluApprox::tanh}, backend_, stream);
      break;
  }
}

TensorView DecoderModel::forward(const ForwardBatch& b, const KvCache& kv, void* stream) {
  const int64_t T = b.num_tokens;
  FK_CHECK(T > 0 && T <= residual_.size(0), "forward: ", T, " tokens; the model was sized for ", residual_.size(0));
  FK_CHECK(b.num_logits > 0 && b.num_logits <= logits_.size(0), "forward: ", b.num_logits,
           " logit rows; the model was sized for ", logits_.size(0));
  TensorView residual = rows(residual_, T);
  const TensorView x = rows(a_, T);
  // The first layer's input: in the residual buffer for the layers of single ops, in x for
  // the decoder_layer op (its first layer reads the embedding as `hidden`).
  const bool whole_layers = runs_layer_op(b);
  call_op(ops::EmbeddingArgs{whole_layers ? x : residual, b.input_ids, weights_.embed_input}, backend_, stream);
  // Image tokens take the vision tower's features instead (Qwen3-VL; never whole layers).
  if (b.image_features) b.image_features->place(residual, stream);

  // Plain RMSNorm without sandwich norms: each norm goes into the linear layer after it
  // (rms_norm_linear; the registry runs it as the norm op and linear when either has a
  // candidate), the residual alternating between two buffers. Other norms: their own ops.
  // Where every layer is one the decoder_layer op covers, one op a layer (the residual in
  // place, residual_alt_ its scratch).
  TensorView residual_next = fuse_norm_linear_ ? rows(residual_alt_, T) : TensorView{};
  for (int64_t l = 0; l < spec_.num_layers(); ++l) {
    if (whole_layers)
      layer_op(b, l, kv, residual, residual_next, /*plan_only=*/false, stream);
    else if (fuse_norm_linear_)
      fused_norm_layer(b, l, kv, residual, residual_next, stream);
    else
      separate_norm_layer(b, l, kv, residual, stream);
    // Deepstack: the layer's output in x (the residual stream is residual + x, summed by the
    // next layer's norm) gains the image tokens' features of this layer.
    if (b.image_features) b.image_features->inject(l, x, stream);
  }
  add_norm(x, residual, weights_.final_norm, stream);

  // The head only for the rows that need logits: gather them (an embedding lookup into the
  // hidden states), then one GEMM.
  const TensorView head_in = rows(head_in_, b.num_logits), logits = rows(logits_, b.num_logits);
  call_op(ops::EmbeddingArgs{head_in, b.logits_indices, x}, backend_, stream);
  linear(logits, head_in, weights_.lm_head, Tensor{}, stream);
  if (spec_.final_logit_soft_cap > 0)
    call_op(ops::LogitSoftcapArgs{logits, spec_.final_logit_soft_cap}, backend_, stream);
  return logits;
}

}  // namespace fk::engine
