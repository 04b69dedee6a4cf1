#include "models/encoder/colbert_settings.h"

#include "fk/status.h"

namespace fk::models::encoder {
namespace {

using nlohmann::json;

int64_t int_field(const json& j, const char* key, int64_t fallback, std::string_view source) {
  if (!j.contains(key)) return fallback;
  FK_CHECK(j[key].is_number_integer(), source, ": colbert.", key, " must be an integer, got ", j[key].dump());
  return j[key].get<int64_t>();
}

int32_t token_id(const json& j, const char* key, int32_t fallback, int64_t vocab, std::string_view source) {
  const int64_t id = int_field(j, key, fallback, source);
  FK_CHECK(id >= 0 && id < vocab, source, ": colbert.", key, " ", id, " is outside the vocabulary of ", vocab);
  return static_cast<int32_t>(id);
}

}  // namespace

ColbertSettings parse_colbert_settings(const json& j, int64_t vocab, std::string_view source) {
  FK_CHECK(j.is_object(), source, ": \"colbert\" must be an object, got ", j.dump());
  ColbertSettings s;
  s.dim = int_field(j, "dim", s.dim, source);
  s.query_maxlen = int_field(j, "query_maxlen", s.query_maxlen, source);
  s.doc_maxlen = int_field(j, "doc_maxlen", s.doc_maxlen, source);
  FK_CHECK(s.dim > 0, source, ": colbert.dim must be positive, got ", s.dim);
  // [CLS] [Q] ... [SEP]: room for at least one text token.
  FK_CHECK(s.query_maxlen >= 4 && s.doc_maxlen >= 4, source,
           ": colbert.query_maxlen and colbert.doc_maxlen must be at least 4 ([CLS], marker, a token, [SEP]), got ",
           s.query_maxlen, " and ", s.doc_maxlen);
  if (j.contains("attend_to_mask_tokens")) {
    FK_CHECK(j["attend_to_mask_tokens"].is_boolean(), source, ": colbert.attend_to_mask_tokens must be true or false");
    s.attend_to_mask_tokens = j["attend_to_mask_tokens"].get<bool>();
  }
  s.pad_token_id = token_id(j, "pad_token_id", s.pad_token_id, vocab, source);
  s.cls_token_id = token_id(j, "cls_token_id", s.cls_token_id, vocab, source);
  s.sep_token_id = token_id(j, "sep_token_id", s.sep_token_id, vocab, source);
  s.mask_token_id = token_id(j, "mask_token_id", s.mask_token_id, vocab, source);
  s.query_marker_id = token_id(j, "query_marker_id", s.query_marker_id, vocab, source);
  s.doc_marker_id = token_id(j, "doc_marker_id", s.doc_marker_id, vocab, source);
  if (j.contains("skiplist")) {
    FK_CHECK(j["skiplist"].is_array(), source, ": colbert.skiplist must be a list of token ids");
    s.skiplist.clear();
    for (const json& id : j["skiplist"]) {
      FK_CHECK(id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < vocab, source,
               ": colbert.skiplist holds ", id.dump(), ", not a token id of the vocabulary of ", vocab);
      s.skiplist.push_back(id.get<int32_t>());
    }
  }
  for (int32_t id : s.skiplist)
    FK_CHECK(id < vocab, source, ": the skiplist's id ", id, " is outside the vocabulary of ", vocab,
             " (set colbert.skiplist for this vocabulary)");
  return s;
}

}  // namespace fk::models::encoder
