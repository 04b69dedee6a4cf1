// BERT-family encoders in the model registry: BGE-M3 (XLM-RoBERTa; its published
// config.json, run with dummy weights) and ColBERTv2 (BERT with ColBERT's projection), each
// with a tiny config of the same architecture, which is also the config of its golden
// checkpoint (tests/data/models/encoders/, made by make_goldens.py and
// make_colbert_goldens.py).
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

// colbert-ir/colbertv2.0's config.json (bert-base-uncased with HF_ColBERT's projection to
// 128); its ColBERT settings are ColBERTv2's defaults (colbert_settings.h).
constexpr const char* kColbertV2Config = R"({
  "architectures": ["HF_ColBERT"],
  "attention_probs_dropout_prob": 0.1,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 512,
  "model_type": "bert",
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "pad_token_id": 0,
  "position_embedding_type": "absolute",
  "type_vocab_size": 2,
  "vocab_size": 30522
})";

// The golden checkpoint's config (tests/data/models/encoders/colbert/, made by
// make_colbert_goldens.py): 2 layers of 128, 2 heads of 64, a projection to 32.
constexpr const char* kTinyColbertConfig = R"({
  "architectures": ["HF_ColBERT"],
  "hidden_act": "gelu",
  "hidden_size": 128,
  "intermediate_size": 256,
  "layer_norm_eps": 1e-12,
  "max_position_embeddings": 48,
  "model_type": "bert",
  "num_attention_heads": 2,
  "num_hidden_layers": 2,
  "pad_token_id": 0,
  "type_vocab_size": 2,
  "vocab_size": 128,
  "colbert": {"dim": 32, "query_maxlen": 16, "doc_maxlen": 24, "attend_to_mask_tokens": false,
              "pad_token_id": 0, "cls_token_id": 4, "sep_token_id": 5, "mask_token_id": 6,
              "query_marker_id": 1, "doc_marker_id": 2, "skiplist": [10, 11, 12, 13, 14]}
})";

ModelRegistration bert() {
  ModelRegistration r;
  r.architecture = "bert";
  r.names = {"ColBERTv2"};
  r.category = "recommendation-specialised";
  r.pattern = RunPattern::batch;
  r.config_types = {"bert"};
  r.presets = {{"colbertv2", PresetKind::production,
                "ColBERTv2: BERT-base, 12 layers of 768, 12 heads, projection to 128; queries of 32, passages of "
                "up to 180 tokens; MaxSim scoring",
                kColbertV2Config},
               {"tiny-colbertv2", PresetKind::tiny, "2 layers of 128, 2 heads of 64, projection to 32; queries of 16",
                kTinyColbertConfig}};
  r.backends = {"cpu", "cuda"};
  r.golden_test = "Encoders/ColbertGoldenCpu.MatchesTransformers/colbert";
  r.factory = [](std::string_view json, std::string_view source) { return XlmRobertaModel::from_config(json, source); };
  return r;
}

const ModelRegistrar kXlmRoberta(xlm_roberta());
const ModelRegistrar kBert(bert());

}  // namespace
}  // namespace fk::models::encoder
