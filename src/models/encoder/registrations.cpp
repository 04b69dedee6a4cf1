// XLM-RoBERTa encoders in the model registry: BGE-M3 (its published config.json, run with
// dummy weights) and a tiny config of the same architecture, which is also the config of
// the golden checkpoint (tests/data/models/encoders/xlm_roberta/, made by
// tests/data/models/encoders/make_goldens.py).
#include "models/encoder/xlm_roberta_model.h"
#include "models/registry.h"

namespace fk::models::encoder {
namespace {

// BAAI/bge-m3's config.json (XLM-RoBERTa large with 8194 positions: 8192 tokens).
constexpr const char* kBgeM3Config = R"({
  "architectures": ["XLMRobertaModel"],
  "attention_probs_dropout_prob": 0.1,
  "bos_token_id": 0,
  "classifier_dropout": null,
  "eos_token_id": 2,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 1024,
  "initializer_range": 0.02,
  "intermediate_size": 4096,
  "layer_norm_eps": 1e-05,
  "max_position_embeddings": 8194,
  "model_type": "xlm-roberta",
  "num_attention_heads": 16,
  "num_hidden_layers": 24,
  "output_past": true,
  "pad_token_id": 1,
  "position_embedding_type": "absolute",
  "torch_dtype": "float32",
  "type_vocab_size": 1,
  "use_cache": true,
  "vocab_size": 250002
})";

// 2 layers of 128, 2 heads of 64 (the CUDA attention's smallest tile), 40 positions.
constexpr const char* kTinyBgeM3Config = R"({
  "architectures": ["XLMRobertaModel"],
  "bos_token_id": 0,
  "eos_token_id": 2,
  "hidden_act": "gelu",
  "hidden_size": 128,
  "intermediate_size": 256,
  "layer_norm_eps": 1e-05,
  "max_position_embeddings": 40,
  "model_type": "xlm-roberta",
  "num_attention_heads": 2,
  "num_hidden_layers": 2,
  "pad_token_id": 1,
  "position_embedding_type": "absolute",
  "type_vocab_size": 1,
  "vocab_size": 256
})";

ModelRegistration xlm_roberta() {
  ModelRegistration r;
  r.architecture = "xlm_roberta";
  r.names = {"BGE-M3"};
  r.category = "recommendation-specialised";
  r.pattern = RunPattern::batch;
  r.config_types = {"xlm-roberta"};
  r.presets = {{"bge-m3", PresetKind::production,
                "BGE-M3: XLM-RoBERTa large, 24 layers of 1024, 16 heads, 8192 tokens; dense, sparse and ColBERT heads",
                kBgeM3Config},
               {"tiny-bge-m3", PresetKind::tiny, "2 layers of 128, 2 heads of 64, 38 tokens; the three BGE-M3 heads",
                kTinyBgeM3Config}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "Encoders/EncoderGoldenCpu.BgeM3MatchesTransformers/xlm_roberta";
  r.factory = [](std::string_view json, std::string_view source) { return XlmRobertaModel::from_config(json, source); };
  return r;
}

const ModelRegistrar kXlmRoberta(xlm_roberta());

}  // namespace
}  // namespace fk::models::encoder
