// A decoder LLM (dense or mixture-of-experts) as a sequence of registry ops (every call
// goes through the op registry, so an installed candidate kernel runs inside the engine).
// One forward pass
// serves prefill, chunked prefill, decode and mixed batches: packed tokens in, logits of
// the requested rows out. Activations live in buffers allocated once for the largest step.
#pragma once
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "serving/generate/forward_batch.h"
#include "runtime/state/kv_cache.h"
#include "runtime/state/recurrent_slot_pool.h"
#include "models/llm/model_spec.h"
#include "models/llm/weights.h"
#include "fk/ops/gpt_oss_layer.h"
#include "fk/ops/moe_layer.h"
#include "fk/ops/layer.h"
#include "fk/tensor.h"

namespace fk::engine {

class DecoderModel {
 public:
  // max_tokens / max_seqs / max_logits: the largest step (token budget, batch, logit rows).
  DecoderModel(ModelSpec spec, ModelWeights weights, Device device, int64_t max_tokens, int64_t max_seqs,
               int64_t max_logits, int64_t max_position, void* stream = nullptr);

  const ModelSpec& spec() const { return spec_; }
  Device device() const { return device_; }
  DType dtype() const { return dtype_; }
  const ModelWeights& weights() const { return weights_; }
  int64_t activation_bytes() const;
  // Models with linear-attention layers (spec().has_recurrent_state()): the pool whose
  // slots hold each sequence's conv and delta-rule state (state_spec() declares its
  // layout), which forward reads and updates at the batch's state_indices. Not owned.
  void set_state_pool(runtime::RecurrentSlotPool* pool) { state_pool_ = pool; }
  // The recurrent_slot group of the linear-attention layers: per layer, "conv"
  // [conv_dim, kernel - 1] in `dtype` and "ssm" [v_heads, k_dim, v_dim] f32.
  static runtime::StateSpec state_spec(const ModelSpec& spec, DType dtype);
  // The buffer forward writes logits into (a graph replay leaves them here too).
  const Tensor& logits_buffer() const { return logits_; }

  // Host-side attention scheduling for this batch's metadata (no device reads, no sync):
  // call before forward, outside graph capture. graph_grid = 0: eager; k >= 1 (decode-only
  // batches): the decode attention's graph grid class k (fk/ops/attention.h), which keeps
  // launch shapes fixed per (batch size, k) so that a graph captured after one plan
  // replays correctly after the next plan of the same class.
  void plan(const ForwardBatch& batch, const KvCache& kv, int32_t graph_grid, void* stream);
  // Launches the whole step (capturable when the batch is decode_only and planned with a
  // graph_grid): returns the [R, V] logits (model dtype), valid once the stream reaches them.
  TensorView forward(const ForwardBatch& batch, const KvCache& kv, void* stream);

 private:
  // One set of attention workspaces per distinct (window, soft-cap) kernel variant:
  // layers of one variant share a plan (Gemma 2 alternates two).
  struct AttentionPlan {
    Tensor float_workspace, int_workspace, host_int_workspace, plan_info;
  };
  // Runs (or, with plan_only, plans) layer `layer`'s attention op.
  void attention(const ForwardBatch& b, int64_t layer, const TensorView& q, const KvCache& kv, const TensorView& out,
                 bool plan_only, void* stream);
  TensorView query_view(int64_t tokens) const;  // q heads inside the fused QKV buffer
  void norm(const TensorView& out, const TensorView& in, const Tensor& w, void* stream) const;
  void add_norm(const TensorView& x, const TensorView& residual, const Tensor& w, void* stream) const;
  void linear(const TensorView& out, const TensorView& in, const Tensor& w, const Tensor& bias, void* stream) const;
  // out = linear(normed = norm(input (+ residual_in)), w, bias) in one op; the residual sum
  // goes to residual_out (absent views: the first layer's norm, no add).
  void norm_linear(const TensorView& out, const TensorView& normed, const TensorView& residual_out,
                   const TensorView& input, const TensorView& residual_in, const Tensor& norm_w, const Tensor& w,
                   const Tensor& bias, void* stream) const;
  // The sparse MLP of an MoE layer: router (unless its logits are already in
  // router_logits_), top-k routing, routed experts (out = experts(in)), then the shared
  // expert where the model has one.
  void moe_mlp(const TensorView& out, const TensorView& in, const LayerWeights& w, bool router_done,
               void* stream) const;
  // One decoder layer with each norm fused into the linear layer after it (rms_norm_linear);
  // the residual alternates between residual_ and residual_alt_. See forward.
  void fused_norm_layer(const ForwardBatch& b, int64_t layer, const KvCache& kv, TensorView& residual,
                        TensorView& residual_next, void* stream);
  // One decoder layer with its norms as ops of their own (Gemma's norms, sandwich norms):
  // the residual updated in place, the layer's output left in a_.
  void separate_norm_layer(const ForwardBatch& b, int64_t layer, const KvCache& kv, TensorView& residual,
                           void* stream);
  // Whether this step runs each layer as one layer op (layer_op_, and a step whose
  // attention is one op: not a mixed step split into its decode and prefill parts); that
  // op's run (or plan) for layer `layer` on the stream (hidden in a_, the residual in
  // `residual`, updated in place; residual_mid its scratch), and its arguments
  // (decoder_model_layer_ops.cpp).
  bool runs_layer_op(const ForwardBatch& b) const;
  void layer_op(const ForwardBatch& b, int64_t layer, const KvCache& kv, const TensorView& residual,
                const TensorView& residual_mid, bool plan_only, void* stream) const;
  ops::DecoderLayerArgs layer_args(const ForwardBatch& b, int64_t layer, const KvCache& kv,
                                   const TensorView& residual, const TensorView& residual_mid) const;
  ops::GptOssLayerArgs gpt_oss_layer_args(const ForwardBatch& b, int64_t layer, const KvCache& kv,
                                          const TensorView& residual, const TensorView& residual_mid) const;
  ops::MoeLayerArgs moe_layer_args(const ForwardBatch& b, int64_t layer, const KvCache& kv,
                                   const TensorView& residual, const TensorView& residual_mid) const;
  template <class Args>
  void fill_layer_common(Args& a, const ForwardBatch& b, int64_t layer, const KvCache& kv, const TensorView& residual,
                         const TensorView& residual_mid) const;
  // The MLP's activation (act = act_fn(gate) * up) for the model's activation function.
  void activation(const TensorView& act, const TensorView& gate_up, void* stream) const;
  // The attention block from the QKV projection on: rope (with q/k norms), cache write,
  // attention; its output in attn_out_.
  void attention_block(const ForwardBatch& b, int64_t layer, const KvCache& kv, void* stream);
  // out += sigmoid(in . shared_gate) * shared_expert(in) (Qwen2-MoE).
  void shared_expert(const TensorView& out, const TensorView& in, const LayerWeights& w, void* stream) const;
  TensorView rows(const Tensor& buffer, int64_t n) const;
  // A gated DeltaNet layer (Qwen3-Next) from its normed input x to its output projection in y.
  void linear_attention(const ForwardBatch& b, int64_t layer, const TensorView& x, const TensorView& y, void* stream);
  TensorView kv_k(const KvCache& kv, int64_t layer) const { return kv.k(spec_.kv_layer(layer)); }
  TensorView kv_v(const KvCache& kv, int64_t layer) const { return kv.v(spec_.kv_layer(layer)); }

  ModelSpec spec_;
  ModelWeights weights_;
  Device device_;
  DType dtype_;
  DeviceType backend_;
  std::vector<Tensor> rope_caches_;  // one per spec_.ropes
  std::vector<AttentionPlan> plans_;
  std::vector<AttentionPlan> decode_part_plans_;  // a split mixed step's decode part (ForwardBatch)
  std::vector<int> layer_plan_;      // which of plans_ each layer uses
  int32_t graph_grid_ = 0;           // what the last plan was made with
  // Activations, sized for the largest step.
  Tensor residual_, a_, b_, qkv_, attn_out_, gate_up_, act_, head_in_, logits_;
  // Models with plain RMSNorm and no sandwich norms fuse every norm into the next linear
  // layer; their residual stream then ping-pongs between residual_ and this buffer.
  bool fuse_norm_linear_ = false;
  Tensor residual_alt_;
  // The op that covers every layer, if one does: decoder_layer (fk/ops/layer.h: plain
  // RMSNorm without sandwich norms, per-head q/k norms or none, a bias on qkv only, a dense
  // SiLU MLP, no logit soft-cap), moe_layer (fk/ops/moe_layer.h: the same attention, routed
  // SiLU experts of the model dtype in every layer, no shared expert) or gpt_oss_layer
  // (fk/ops/gpt_oss_layer.h). forward calls it once per layer, so a candidate for it
  // replaces whole layers. Models with other layers anywhere keep the ops of each layer.
  enum class LayerOp { none, decoder, moe, gpt_oss };
  LayerOp choose_layer_op() const;
  LayerOp layer_op_ = LayerOp::none;
  // MoE layers: router logits [T, E], routing [T, k] (f32 weights, i32 ids), the experts'
  // workspace; OLMoE: the normalised q and k [T, q_size], [T, kv_size]. A shared expert
  // (Qwen2-MoE) runs its gate_up and activation in gate_up_ and act_ (sized for both it and
  // the dense MLP, which never run in one layer), its output into shared_out_ [T, H] and
  // its gate logit into shared_gate_ [T, 1].
  Tensor router_logits_, topk_weights_, topk_ids_, moe_workspace_, q_normed_, k_normed_, shared_out_, shared_gate_;
  // Qwen3-Next: the gated attention output [T, q_size]; per linear-attention layer step the
  // projections [T, conv_dim + 2 Hv] and z [T, Hv*V], the convolved q | k | v, the gates
  // g and beta [T, Hv], the delta rule's output and its gated norm [T, Hv*V] (the states
  // stay in the slot pool, which the ops index).
  Tensor attn_gated_, lin_proj_, lin_z_, conv_out_, gdn_g_, gdn_beta_, core_out_, core_normed_;
  runtime::RecurrentSlotPool* state_pool_ = nullptr;
  // gpt-oss: the attention rows' base-2 log-sum-exps [T, Hq] f32, for the sinks.
  Tensor attn_lse_;
  // M-RoPE models (Qwen3-VL), steps with ForwardBatch::mrope_positions: zeros [max_tokens]
  // i64. The per-head q/k norms run as qk_norm_rope at position 0, where the rotation is
  // the identity (cos 1, sin 0), then mrope_rotary_embedding rotates and reshape_and_cache
  // writes the cache.
  Tensor zero_positions_;
  // The attention prologue of such a step (instead of rope_and_cache).
  void mrope_and_cache(const ForwardBatch& b, int64_t layer, const TensorView& q, const TensorView& k,
                       const TensorView& v, const KvCache& kv, void* stream);
};

}  // namespace fk::engine
