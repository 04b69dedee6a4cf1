// The config of a BERT-family encoder: XLM-RoBERTa (HF XLMRobertaModel's config.json,
// model_type "xlm-roberta": BGE-M3's backbone) or BERT (model_type "bert": ColBERTv2's,
// whose architectures name HF_ColBERT and whose ColBERT settings colbert_settings.h reads).
// The two differ only in the position ids (RoBERTa counts from pad_token_id + 1, BERT from
// 0) and their defaults. Parsed with named errors for what the engine does not run:
// relative position embeddings, decoder or cross-attention use, activations other than
// GELU, head dims the attention op does not take.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fk/ops/activation.h"
#include "models/encoder/colbert_settings.h"

namespace fk::models::encoder {

enum class EncoderFamily { xlm_roberta, bert };

struct XlmRobertaConfig {
  std::string model_type = "xlm-roberta";
  EncoderFamily family = EncoderFamily::xlm_roberta;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t intermediate_size = 0;
  int64_t max_position_embeddings = 0;
  int64_t type_vocab_size = 1;
  int64_t pad_token_id = 1;  // RoBERTa's padding_idx: positions count from pad_token_id + 1
  int64_t bos_token_id = 0;  // the CLS token whose state is the dense embedding (BERT: [CLS])
  int64_t eos_token_id = 2;  // (BERT: [SEP])
  double layer_norm_eps = 1e-12;  // XLMRobertaConfig's default (BGE-M3 sets 1e-5)
  ops::GeluApprox gelu = ops::GeluApprox::none;
  std::optional<ColbertSettings> colbert;  // a ColBERT checkpoint (HF_ColBERT)

  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // The first position id: RoBERTa's padding offset, or BERT's 0.
  int64_t position_offset() const { return family == EncoderFamily::xlm_roberta ? pad_token_id + 1 : 0; }
  // The longest sequence the position table holds.
  int64_t max_tokens_per_sequence() const { return max_position_embeddings - position_offset(); }
};

// Parses config.json text (model_type "xlm-roberta" or "bert"); `source` names it in
// errors. Throws fk::Error naming the field or the unsupported setting.
XlmRobertaConfig parse_xlm_roberta_config(std::string_view config_json, std::string_view source);

}  // namespace fk::models::encoder
