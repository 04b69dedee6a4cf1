// What fk serve's encoder endpoints compute (encoder_requests.h) on one loaded text encoder
// of the Batch pattern, as JSON bodies:
//   embeddings: OpenAI's {"object": "list", "data": [{"object": "embedding", "index",
//     "embedding"}], "model", "usage"}; "embedding" is the dense vector (BGE-M3) or, for a
//     ColBERT model, the list of the text's vectors (as a query or a document, input_type);
//     BGE-M3's "lexical_weights" ({token id: weight}) and "colbert_vecs" on request.
//   score: {"object": "list", "data": [{"object": "score", "query_index", "index", "score"}],
//     "model", "usage"}: MaxSim late interaction by the maxsim op. ColBERT's is ColBERT's sum
//     over the query's vectors; BGE-M3's multi-vector score is that sum over the query's
//     vector count, as BGE-M3's own colbert_score divides it.
// A request larger than the batch the model was loaded for runs in several forward passes.
// Calls are serialised (one model, one stream). Client errors are ApiError 400s naming the
// field; an id outside the vocabulary or a sequence past the positions among them.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "models/encoder/xlm_roberta_model.h"
#include "serving/embed/encoder_requests.h"
#include "serving/http/batch_service.h"
#include "text/tokenizer.h"

namespace fk::serve {

class EncoderService {
 public:
  // `model` loaded; `tok` may be null (token-id inputs only).
  EncoderService(std::unique_ptr<models::Model> model, std::unique_ptr<tokenizer::Tokenizer> tok,
                 std::string served_model);

  nlohmann::json embeddings(const std::string& body);
  nlohmann::json score(const std::string& body);
  const std::string& served_model() const { return served_model_; }
  bool colbert() const { return encoder_->config().colbert.has_value(); }
  bool has_tokenizer() const { return tok_ != nullptr; }

 private:
  void check_texts(const std::vector<TextIds>& texts, const std::string& param) const;

  std::unique_ptr<models::Model> model_;
  models::encoder::XlmRobertaModel* encoder_;
  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::string served_model_;
  std::mutex mu_;
};

// fk serve's endpoints of `service`: POST /v1/embeddings and /v1/score; its task "score" for a
// ColBERT model, else "embed".
BatchService encoder_batch_service(std::shared_ptr<EncoderService> service);

}  // namespace fk::serve
