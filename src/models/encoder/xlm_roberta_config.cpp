#include "models/encoder/xlm_roberta_config.h"

#include <nlohmann/json.hpp>

#include "fk/status.h"

namespace fk::models::encoder {
namespace {

using nlohmann::json;

int64_t required_int(const json& j, const char* key, std::string_view source) {
  FK_CHECK(j.contains(key) && j[key].is_number_integer(), source, ": XLM-RoBERTa config needs an integer '", key, "'");
  return j[key].get<int64_t>();
}

int64_t optional_int(const json& j, const char* key, int64_t fallback, std::string_view source) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  FK_CHECK(j[key].is_number_integer(), source, ": '", key, "' must be an integer, got ", j[key].dump());
  return j[key].get<int64_t>();
}

bool optional_bool(const json& j, const char* key, std::string_view source) {
  if (!j.contains(key) || j[key].is_null()) return false;
  FK_CHECK(j[key].is_boolean(), source, ": '", key, "' must be true or false, got ", j[key].dump());
  return j[key].get<bool>();
}

bool names_hf_colbert(const json& j) {
  if (!j.contains("architectures") || !j["architectures"].is_array()) return false;
  for (const json& a : j["architectures"])
    if (a.is_string() && a.get<std::string>() == "HF_ColBERT") return true;
  return false;
}

}  // namespace

XlmRobertaConfig parse_xlm_roberta_config(std::string_view config_json, std::string_view source) {
  json j;
  try {
    j = json::parse(config_json);
  } catch (const json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": not valid JSON: ", e.what());
  }
  FK_CHECK(j.is_object(), source, ": a config must be a JSON object");
  XlmRobertaConfig c;
  c.model_type = j.value("model_type", std::string());
  FK_CHECK(c.model_type == "xlm-roberta" || c.model_type == "bert", source, ": model_type '", c.model_type,
           "' is not a BERT-family encoder config (expected \"xlm-roberta\" or \"bert\")");
  const bool bert = c.model_type == "bert";
  c.family = bert ? EncoderFamily::bert : EncoderFamily::xlm_roberta;
  c.vocab_size = required_int(j, "vocab_size", source);
  c.hidden_size = required_int(j, "hidden_size", source);
  c.num_hidden_layers = required_int(j, "num_hidden_layers", source);
  c.num_attention_heads = required_int(j, "num_attention_heads", source);
  c.intermediate_size = required_int(j, "intermediate_size", source);
  c.max_position_embeddings = required_int(j, "max_position_embeddings", source);
  c.type_vocab_size = optional_int(j, "type_vocab_size", 2, source);
  c.pad_token_id = optional_int(j, "pad_token_id", bert ? 0 : 1, source);
  // A sequence's first and last tokens: RoBERTa's <s> and </s>; BERT's [CLS] and [SEP]
  // (bert-base's ids where the config names none, ColBERT's where it has settings).
  c.bos_token_id = optional_int(j, "bos_token_id", bert ? 101 : 0, source);
  c.eos_token_id = optional_int(j, "eos_token_id", bert ? 102 : 2, source);
  if (j.contains("layer_norm_eps")) {
    FK_CHECK(j["layer_norm_eps"].is_number(), source, ": 'layer_norm_eps' must be a number");
    c.layer_norm_eps = j["layer_norm_eps"].get<double>();
  }
  FK_CHECK(c.vocab_size > 0 && c.hidden_size > 0 && c.num_hidden_layers > 0 && c.num_attention_heads > 0 &&
               c.intermediate_size > 0 && c.type_vocab_size > 0,
           source, ": vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size and ",
           "type_vocab_size must be positive");
  FK_CHECK(c.hidden_size % c.num_attention_heads == 0, source, ": hidden_size ", c.hidden_size,
           " is not a multiple of num_attention_heads ", c.num_attention_heads);
  const int64_t d = c.head_dim();
  FK_CHECK(d % 8 == 0 && d <= 256, source, ": head dim ", d,
           " (hidden_size / num_attention_heads) is not supported: varlen_attention takes multiples of 8 up to 256");
  FK_CHECK(c.pad_token_id >= 0 && c.pad_token_id < c.vocab_size, source, ": pad_token_id ", c.pad_token_id,
           " is outside the vocabulary of ", c.vocab_size);
  FK_CHECK(c.max_tokens_per_sequence() > 0, source, ": max_position_embeddings ", c.max_position_embeddings,
           " leaves no position after the first position id ", c.position_offset());
  FK_CHECK(c.layer_norm_eps > 0, source, ": layer_norm_eps must be positive");

  const std::string pos = j.value("position_embedding_type", std::string("absolute"));
  FK_CHECK(pos == "absolute", source, ": position_embedding_type '", pos,
           "' is not supported (only \"absolute\": relative_key attention biases are not implemented)");
  FK_CHECK(!optional_bool(j, "is_decoder", source), source,
           ": is_decoder = true (a causal XLM-RoBERTa decoder) is not supported; the encoder runs bidirectionally");
  FK_CHECK(!optional_bool(j, "add_cross_attention", source), source, ": add_cross_attention = true is not supported");
  const std::string act = j.value("hidden_act", std::string("gelu"));
  if (act == "gelu")
    c.gelu = ops::GeluApprox::none;
  else if (act == "gelu_new" || act == "gelu_pytorch_tanh")
    c.gelu = ops::GeluApprox::tanh;
  else
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": hidden_act '", act,
            "' is not supported (gelu, gelu_new, gelu_pytorch_tanh)");
  if (j.contains("colbert")) {
    FK_CHECK(bert, source, ": a \"colbert\" object needs a BERT config (model_type \"bert\")");
    c.colbert = parse_colbert_settings(j["colbert"], c.vocab_size, source);
  } else if (names_hf_colbert(j)) {
    FK_CHECK(bert, source, ": HF_ColBERT needs a BERT config (model_type \"bert\")");
    c.colbert = parse_colbert_settings(json::object(), c.vocab_size, source);
  }
  if (c.colbert) {
    c.bos_token_id = c.colbert->cls_token_id;
    c.eos_token_id = c.colbert->sep_token_id;
    FK_CHECK(c.colbert->query_maxlen <= c.max_tokens_per_sequence() &&
                 c.colbert->doc_maxlen <= c.max_tokens_per_sequence(),
             source, ": colbert.query_maxlen ", c.colbert->query_maxlen, " and doc_maxlen ", c.colbert->doc_maxlen,
             " must fit the ", c.max_tokens_per_sequence(), " positions");
  }
  return c;
}

}  // namespace fk::models::encoder
