// The bodies of fk serve's encoder endpoints, parsed with OpenAI-style errors (ApiError:
// 400 naming the field):
//   POST /v1/embeddings {"model", "input": a string, a list of strings, a list of token ids or
//        a list of such lists; "encoding_format": "float" (default) or "base64" (the float32
//        values' little-endian bytes); "user" (accepted, unused); fk's extensions: "outputs"
//        (BGE-M3: a list of "dense", "sparse", "colbert"; default ["dense"]) and "input_type"
//        (ColBERT: "document", the default, or "query")}
//   POST /v1/score {"model", "query" (one text) or "queries" (a list), "documents" (a list)}
// Strings need the model's tokenizer; token-id texts are what that tokenizer would give.
// Fields this server would ignore ("dimensions", anything unknown) are refused.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace fk::serve {

// Token ids of one text, and whether it came as a string (tokenized here).
using TextIds = std::vector<int32_t>;

struct EmbeddingsRequest {
  std::vector<TextIds> inputs;
  bool base64 = false;
  bool dense = true, sparse = false, colbert = false;  // outputs
  bool query = false;                                  // ColBERT's input_type
};

struct ScoreRequest {
  std::vector<TextIds> queries, documents;
};

// `special_tokens`: whether strings get the tokenizer's special tokens (a plain encoder's
// sequences) or not (ColBERT's texts, which its formatting frames).
EmbeddingsRequest parse_embeddings_request(const std::string& body, const std::string& served_model,
                                           const tokenizer::Tokenizer* tok, bool special_tokens);
ScoreRequest parse_score_request(const std::string& body, const std::string& served_model,
                                 const tokenizer::Tokenizer* tok, bool special_tokens);

// The float32 values' little-endian bytes in base64 (OpenAI's encoding_format "base64").
std::string base64_floats(const std::vector<float>& values);

}  // namespace fk::serve
