#include "models/encoder/xlm_roberta_model.h"

#include <algorithm>
#include <cmath>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/embedding.h"
#include "fk/ops/linear.h"
#include "fk/ops/elementwise.h"
#include "fk/ops/layer.h"
#include "fk/ops/norm.h"
#include "fk/status.h"

namespace fk::models::encoder {
namespace {

// The first `n` rows of a buffer.
TensorView rows(const Tensor& t, int64_t n) {
  TensorView v = t.view();
  v.shape[0] = n;
  return v;
}

Tensor filled(const Shape& shape, DType dtype, double value, Device device) {
  Tensor host = Tensor::empty(shape, dtype);
  const size_t es = host.view().element_size();
  for (int64_t i = 0; i < host.numel(); ++i)
    store_element(static_cast<char*>(host.data()) + static_cast<size_t>(i) * es, dtype, value);
  return device.is_cpu() ? host : host.to(device);
}

}  // namespace

XlmRobertaModel::XlmRobertaModel(XlmRobertaConfig config) : config_(std::move(config)) {}

std::unique_ptr<Model> XlmRobertaModel::from_config(std::string_view config_json, std::string_view source) {
  return std::make_unique<XlmRobertaModel>(parse_xlm_roberta_config(config_json, source));
}

std::vector<TensorDecl> XlmRobertaModel::weights() const {
  return xlm_roberta_weight_decls(config_, options_.dtype);
}

std::vector<TensorDecl> XlmRobertaModel::inputs() const {
  return {{"input_ids", {kPerCall}, DType::i32, "token ids of the packed sequences"},
          {"position_ids", {kPerCall}, DType::i32,
           config_.family == EncoderFamily::bert ? "BERT positions: the index in the sequence"
                                                  : "RoBERTa positions: pad_token_id + 1 + index among non-pad tokens"},
          {"token_type_ids", {kPerCall}, DType::i32, "segment ids (optional: zeros)"},
          {"cu_seqlens", {kPerCall}, DType::i32, "[B + 1] offsets of the sequences in the packed tokens"},
          {"cu_seqlens_host", {kPerCall}, DType::i32, "cu_seqlens on the host (plan reads it)"},
          {"seqused_k", {kPerCall}, DType::i32, "[B] (optional) attention keys per sequence: its first tokens"}};
}

std::vector<TensorDecl> XlmRobertaModel::outputs() const {
  const int64_t h = config_.hidden_size;
  if (config_.colbert)
    return {{"last_hidden_state", {kPerCall, h}, options_.dtype, "the last layer's output per token"},
            {"colbert", {kPerCall, config_.colbert->dim}, options_.dtype,
             "ColBERT's projection per token, before L2 normalisation"}};
  return {{"last_hidden_state", {kPerCall, h}, options_.dtype, "the last layer's output per token"},
          {"colbert_linear", {kPerCall, h}, options_.dtype,
           "BGE-M3 multi-vector head before L2 normalisation (tokens 1.. of each sequence are its vectors)"},
          {"sparse_linear", {kPerCall, 1}, options_.dtype, "BGE-M3 sparse head's logit per token, before ReLU"}};
}

void XlmRobertaModel::load(const LoadOptions& o) {
  FK_CHECK(o.dtype == DType::bf16 || o.dtype == DType::f16, architecture(), ": the model dtype must be bf16 or f16, got ",
           dtype_name(o.dtype));
  FK_CHECK(o.max_tokens > 0 && o.max_seqs > 0, architecture(), ": max_tokens and max_seqs must be positive");
  options_ = o;
  weights_ = o.checkpoint.empty() ? random_xlm_roberta_weights(config_, o.dtype, o.device, o.seed, o.stream)
                                  : load_xlm_roberta_weights(config_, o.checkpoint, o.dtype, o.device, o.stream);
  const int64_t t = o.max_tokens, h = config_.hidden_size, i = config_.intermediate_size;
  auto buffer = [&](const Shape& s) { return Tensor::empty(s, o.dtype, o.device, o.stream); };
  x_ = buffer({t, h});
  qkv_ = buffer({t, 3 * h});
  attn_ = buffer({t, h});
  sub_ = buffer({t, h});
  inter_ = buffer({t, i});
  inter_act_ = buffer({t, i});
  pos_emb_ = buffer({t, h});
  type_emb_ = buffer({t, h});
  colbert_ = buffer({t, config_.colbert ? config_.colbert->dim : h});
  sparse_ = buffer({t, 1});
  zero_types_ = filled({t}, DType::i32, 0, o.device);
  loaded_ = true;
}

TensorView XlmRobertaModel::input(const StepInputs& in, const char* name, bool required) const {
  for (const auto& [n, v] : in.tensors)
    if (n == name) return v;
  FK_CHECK(!required, architecture(), ": step input '", name, "' is missing");
  return TensorView{};
}

void XlmRobertaModel::plan(const StepInputs& in, void*) {
  FK_CHECK(loaded_, architecture(), ": plan before load");
  const TensorView cu = input(in, "cu_seqlens_host", true);
  FK_CHECK(cu.device.is_cpu() && cu.dtype == DType::i32 && cu.rank == 1 && cu.shape[0] >= 1 && cu.is_contiguous(),
           architecture(), ": cu_seqlens_host must be a contiguous host i32 [B + 1], got ", describe(cu));
  const auto* c = static_cast<const int32_t*>(cu.data);
  const int64_t b = cu.shape[0] - 1;
  FK_CHECK(b <= options_.max_seqs, architecture(), ": ", b, " sequences, more than the ", options_.max_seqs,
           " the model was loaded for (max_seqs)");
  FK_CHECK(c[0] == 0, architecture(), ": cu_seqlens_host[0] must be 0");
  int32_t longest = 0;
  for (int64_t s = 0; s < b; ++s) {
    const int32_t n = c[s + 1] - c[s];
    FK_CHECK(n >= 1, architecture(), ": sequence ", s, " has ", n, " tokens; every sequence needs at least one");
    FK_CHECK(n <= config_.max_tokens_per_sequence(), architecture(), ": sequence ", s, " has ", n,
             " tokens, more than the ", config_.max_tokens_per_sequence(), " its position table holds (",
             "max_position_embeddings ", config_.max_position_embeddings, " from position id ",
             config_.position_offset(), ")");
    longest = std::max(longest, n);
  }
  FK_CHECK(c[b] <= options_.max_tokens, architecture(), ": ", c[b], " tokens, more than the ", options_.max_tokens,
           " the model was loaded for (max_tokens)");
  tokens_ = c[b];
  seqs_ = b;
  max_seqlen_ = longest;
}

void XlmRobertaModel::embed(const StepInputs& in, void* stream) {
  const DeviceType be = options_.device.type;
  const int64_t t = tokens_;
  const TensorView ids = input(in, "input_ids", true), pos = input(in, "position_ids", true);
  TensorView types = input(in, "token_type_ids", false);
  if (types.data == nullptr) types = rows(zero_types_, t);
  FK_CHECK(ids.rank == 1 && ids.shape[0] == t && pos.rank == 1 && pos.shape[0] == t && types.shape[0] == t,
           architecture(), ": input_ids, position_ids and token_type_ids must have the planned ", t, " tokens, got ",
           describe(ids), ", ", describe(pos), ", ", describe(types));
  // HF's order: (word + token type) + position, each add rounded to the dtype.
  call_op(ops::EmbeddingArgs{rows(sub_, t), ids, weights_.word}, be, stream);
  call_op(ops::EmbeddingArgs{rows(type_emb_, t), types, weights_.token_type}, be, stream);
  call_op(ops::EmbeddingArgs{rows(pos_emb_, t), pos, weights_.position}, be, stream);
  call_op(ops::AddArgs{rows(sub_, t), rows(sub_, t), rows(type_emb_, t)}, be, stream);
  call_op(ops::AddLayerNormArgs{rows(x_, t), rows(pos_emb_, t), rows(sub_, t), weights_.embed_norm,
                                weights_.embed_norm_bias, static_cast<float>(config_.layer_norm_eps)},
          be, stream);
}

void XlmRobertaModel::layer(const EncoderLayerWeights& w, void* stream) {
  const int64_t t = tokens_;
  ops::EncoderLayerArgs a{};
  a.hidden = rows(x_, t);
  a.qkv_weight = w.qkv, a.qkv_bias = w.qkv_bias;
  a.o_weight = w.attn_out, a.o_bias = w.attn_out_bias;
  a.attn_norm = w.attn_norm, a.attn_norm_bias = w.attn_norm_bias;
  a.up_weight = w.up, a.up_bias = w.up_bias;
  a.down_weight = w.down, a.down_bias = w.down_bias;
  a.out_norm = w.out_norm, a.out_norm_bias = w.out_norm_bias;
  a.cu_seqlens = cu_seqlens_;
  a.cu_seqlens_host = cu_seqlens_host_;
  a.qkv = rows(qkv_, t), a.attn_out = rows(attn_, t), a.sub = rows(sub_, t);
  a.inter = rows(inter_, t), a.act = rows(inter_act_, t);
  a.num_heads = static_cast<int32_t>(config_.num_attention_heads);
  a.max_seqlen = max_seqlen_;
  a.eps = static_cast<float>(config_.layer_norm_eps);
  a.gelu = config_.gelu;
  a.seqused_k = seqused_k_;
  call_op(a, options_.device.type, stream);
}

TensorView XlmRobertaModel::forward(const StepInputs& in, void* stream) {
  FK_CHECK(loaded_, architecture(), ": forward before load");
  cu_seqlens_ = input(in, "cu_seqlens", true);
  cu_seqlens_host_ = input(in, "cu_seqlens_host", true);
  FK_CHECK(cu_seqlens_.rank == 1 && cu_seqlens_.shape[0] == seqs_ + 1, architecture(), ": cu_seqlens must be [",
           seqs_ + 1, "] as planned, got ", describe(cu_seqlens_));
  seqused_k_ = input(in, "seqused_k", false);
  FK_CHECK(seqused_k_.data == nullptr || (seqused_k_.rank == 1 && seqused_k_.shape[0] == seqs_), architecture(), ": ",
           "seqused_k must be [", seqs_, "] (one key count per sequence), got ", describe(seqused_k_));
  embed(in, stream);
  for (const EncoderLayerWeights& w : weights_.layers) layer(w, stream);
  const DeviceType be = options_.device.type;
  const TensorView none{};
  if (has_colbert_projection())
    call_op(ops::LinearArgs{rows(colbert_, tokens_), rows(x_, tokens_), weights_.colbert_projection, none, none, none},
            be, stream);
  if (has_heads()) {
    call_op(ops::LinearArgs{rows(colbert_, tokens_), rows(x_, tokens_), weights_.heads.colbert,
                            weights_.heads.colbert_bias, none, none},
            be, stream);
    call_op(ops::LinearArgs{rows(sparse_, tokens_), rows(x_, tokens_), weights_.heads.sparse,
                            weights_.heads.sparse_bias, none, none},
            be, stream);
  }
  return rows(x_, tokens_);
}

TensorView XlmRobertaModel::colbert_output() const {
  return has_heads() || has_colbert_projection() ? rows(colbert_, tokens_) : TensorView{};
}
TensorView XlmRobertaModel::sparse_output() const { return has_heads() ? rows(sparse_, tokens_) : TensorView{}; }

}  // namespace fk::models::encoder
