// A BERT-family encoder (XLM-RoBERTa: BGE-M3's backbone; BERT: ColBERTv2's) as a
// models::Model of the Batch pattern: one forward pass over a packed batch of token
// sequences, no state kept between calls.
//
// Forward (post-LN BERT layers, every op through the registry):
//   x = LayerNorm(word[ids] + token_type[types] + position[positions])
//   per layer (one encoder_layer op, fk/ops/layer.h):
//              qkv = x Wqkv^T + b; a = varlen_attention(q, k, v) (bidirectional, per sequence)
//              x = LayerNorm(x + a Wo^T + bo)
//              x = LayerNorm(x + gelu(x W1^T + b1) W2^T + b2)
//   with BGE-M3's heads: colbert = x Wc^T + bc, sparse = x ws^T + bs (per token);
//   with ColBERT's projection: colbert = x Wl^T ([T, dim], no bias).
// Each residual add and the LayerNorm after it are one add_layer_norm (the sum rounded to
// the dtype first, as HF's x + y stores it); the embeddings' sums are add, then
// add_layer_norm with the position embedding.
// Pooling (the CLS row, the ReLU of the sparse logits, the L2 norms of the dense and
// ColBERT vectors) is left to the Batch runner (embed_batch.h), on the host.
//
// Inputs (StepInputs::tensors, by name; i32, contiguous, on the model's device unless
// said): input_ids [T], position_ids [T] (RoBERTa's: pad_token_id + 1 + index among the
// sequence's non-pad tokens, a pad token gets pad_token_id; BERT's: the index), token_type_ids
// [T] (optional: zeros), cu_seqlens [B + 1], cu_seqlens_host [B + 1] on the host (what plan
// reads), and seqused_k [B] (optional): sequence b's first seqused_k[b] tokens are its only
// attention keys (ColBERT's [MASK]-padded queries).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fk/tensor.h"
#include "models/encoder/xlm_roberta_config.h"
#include "models/encoder/xlm_roberta_weights.h"
#include "models/model.h"

namespace fk::models::encoder {

class XlmRobertaModel final : public Model {
 public:
  explicit XlmRobertaModel(XlmRobertaConfig config);
  static std::unique_ptr<Model> from_config(std::string_view config_json, std::string_view source);

  std::string_view architecture() const override {
    return config_.family == EncoderFamily::bert ? "bert" : "xlm_roberta";
  }
  RunPattern pattern() const override { return RunPattern::batch; }
  std::string task_category() const override { return "encoders"; }
  std::vector<TensorDecl> weights() const override;
  std::vector<TensorDecl> inputs() const override;
  std::vector<TensorDecl> outputs() const override;
  std::vector<runtime::StateSpec> state() const override { return {}; }

  void load(const LoadOptions& options) override;
  bool loaded() const override { return loaded_; }
  void plan(const StepInputs& in, void* stream) override;
  // Returns last_hidden_state [T, H] of the planned batch.
  TensorView forward(const StepInputs& in, void* stream) override;

  const XlmRobertaConfig& config() const { return config_; }
  const LoadOptions& load_options() const { return options_; }
  bool has_heads() const { return weights_.heads.present(); }
  bool has_colbert_projection() const { return weights_.colbert_projection.defined(); }
  // The heads' raw outputs of the last forward: colbert_linear [T, H] (or ColBERT's
  // projection [T, dim]) and sparse_linear [T, 1] (before ReLU / normalisation); empty
  // views without them.
  TensorView colbert_output() const;
  TensorView sparse_output() const;

 private:
  TensorView input(const StepInputs& in, const char* name, bool required) const;
  void embed(const StepInputs& in, void* stream);
  void layer(const EncoderLayerWeights& w, void* stream);

  XlmRobertaConfig config_;
  LoadOptions options_;
  bool loaded_ = false;
  XlmRobertaWeights weights_;
  // Activations for options_.max_tokens rows.
  Tensor x_, qkv_, attn_, sub_, inter_, inter_act_, pos_emb_, type_emb_, colbert_, sparse_;
  Tensor zero_types_;   // [max_tokens] i32 zeros: token types when none are given
  // The planned batch.
  int64_t tokens_ = 0, seqs_ = 0;
  int32_t max_seqlen_ = 0;
  TensorView cu_seqlens_{};       // the forward's device offsets
  TensorView cu_seqlens_host_{};  // and their host mirror
  TensorView seqused_k_{};        // the forward's key counts, or empty
};

}  // namespace fk::models::encoder
