// `fk embed` on a ColBERT model (a BERT whose config names HF_ColBERT): queries and
// documents in, their ColBERT vectors and the MaxSim score of every (query, document) pair
// out, as ColBERT's searcher ranks them (colbert_encode.h).
// Input (--input): {"queries": [...], "documents": [...]}, each item either a list of token
// ids (the text's tokenizer ids without special tokens) or, with --tokenizer, a string.
// Without --input: random token ids of a fixed seed (--batch queries and documents).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "models/encoder/xlm_roberta_model.h"

namespace fk::cli {

struct ColbertEmbedInput {
  std::string input;      // JSON file, or empty for random texts
  std::string tokenizer;  // tokenizer.json for string items
  uint64_t seed = 0;
  int64_t batch = 4;      // random texts: queries and documents
  int64_t length = 16;    // random texts: tokens per text
};

// The texts' token ids: {"queries": [[...]], "documents": [[...]]}. Throws naming the item.
nlohmann::json colbert_texts(const ColbertEmbedInput& in, const models::encoder::XlmRobertaConfig& config);

// Encodes and scores the texts on the loaded model: {"queries": [{"index", "ids",
// "colbert_vecs"}], "documents": [...], "scores": [[...]]}; `vectors` false leaves the
// vectors out (scores and ids only).
nlohmann::json colbert_embed(models::encoder::XlmRobertaModel& model, const nlohmann::json& texts, bool vectors);

}  // namespace fk::cli
