// ColBERT's encoding and scoring on a BERT encoder with ColBERT's projection
// (colbert_settings.h), as ColBERT's QueryTokenizer, DocTokenizer and ColBERT.query / .doc /
// colbert_score do it, from the texts' token ids (a tokenizer's ids without special tokens):
//   query: [CLS] [Q] t_1 .. t_k [SEP], truncated to query_maxlen, padded to query_maxlen with
//          [MASK]; the [MASK] rows are no attention key (attend_to_mask_tokens = false: the
//          model's seqused_k) but each is one of the query's vectors
//   doc:   [CLS] [D] t_1 .. t_k [SEP], truncated to doc_maxlen; the rows whose id is in the
//          skiplist (punctuation) give no vector
//   vectors = normalize(linear(last_hidden_state)) of the kept rows
//   score(q, d) = sum over q's vectors of the max over d's vectors of the dot product (the
//          maxsim op, on the model's device)
#pragma once
#include <cstdint>
#include <vector>

#include "models/encoder/xlm_roberta_model.h"

namespace fk::models::encoder {

enum class ColbertSide { query, document };

// One text's model input: the formatted ids and how many of them are attention keys.
struct ColbertInput {
  std::vector<int32_t> ids;
  int32_t keys = 0;
};
ColbertInput colbert_format(const std::vector<int32_t>& text_ids, ColbertSide side, const ColbertSettings& settings);

struct ColbertVectors {
  std::vector<int32_t> ids;     // the formatted input
  std::vector<int32_t> rows;    // the input positions that gave the vectors
  std::vector<float> vectors;   // [rows, dim] row-major, unit length
};

// Encodes a batch of texts' ids in one forward pass. Throws naming the text for an id
// outside the vocabulary, and for a model without ColBERT's projection.
std::vector<ColbertVectors> colbert_encode(XlmRobertaModel& model, const std::vector<std::vector<int32_t>>& texts,
                                           ColbertSide side);

// MaxSim scores [queries, documents] row-major of `dim`-wide vectors, by the maxsim op on
// `device` (f32).
std::vector<float> maxsim_scores(const std::vector<ColbertVectors>& queries,
                                 const std::vector<ColbertVectors>& documents, int64_t dim, Device device,
                                 void* stream);

// maxsim_scores on the model's device with ColBERT's width.
std::vector<float> colbert_scores(XlmRobertaModel& model, const std::vector<ColbertVectors>& queries,
                                  const std::vector<ColbertVectors>& documents);

}  // namespace fk::models::encoder
