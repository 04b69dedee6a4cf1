// ColBERT's settings of a BERT encoder checkpoint (ColBERTv2's HF_ColBERT: a BertModel and
// a linear projection to `dim` without bias): how queries and documents are formatted and
// which document tokens give no vector. Upstream keeps them in the checkpoint's
// artifact.metadata and its tokenizer; here they ride in config.json's "colbert" object,
// and a config whose architectures name HF_ColBERT without one gets ColBERTv2's (dim 128,
// query_maxlen 32, doc_maxlen 180, bert-base-uncased's special and punctuation ids).
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace fk::models::encoder {

struct ColbertSettings {
  int64_t dim = 128;            // the projection's width
  int64_t query_maxlen = 32;    // every query is padded (with [MASK]) or truncated to this
  int64_t doc_maxlen = 180;     // documents are truncated to this
  bool attend_to_mask_tokens = false;  // whether the query's [MASK] padding is a key
  int32_t pad_token_id = 0;
  int32_t cls_token_id = 101;
  int32_t sep_token_id = 102;
  int32_t mask_token_id = 103;
  int32_t query_marker_id = 1;  // [unused0], ColBERT's [Q]
  int32_t doc_marker_id = 2;    // [unused1], ColBERT's [D]
  // The ids of Python's string.punctuation marks: document tokens that get no vector.
  std::vector<int32_t> skiplist = {999,  1000, 1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009,
                                   1010, 1011, 1012, 1013, 1024, 1025, 1026, 1027, 1028, 1029, 1030,
                                   1031, 1032, 1033, 1034, 1035, 1036, 1063, 1064, 1065, 1066};
};

// Parses config.json's "colbert" object over ColBERTv2's defaults; `vocab_size` bounds the
// ids. Throws fk::Error naming the field.
ColbertSettings parse_colbert_settings(const nlohmann::json& j, int64_t vocab_size, std::string_view source);

}  // namespace fk::models::encoder
