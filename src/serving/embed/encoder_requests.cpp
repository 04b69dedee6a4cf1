#include "serving/embed/encoder_requests.h"

#include <cstring>
#include <set>

#include "serving/http/openai_api.h"

namespace fk::serve {
namespace {

using nlohmann::json;

void refuse_unknown(const json& body, const std::set<std::string>& known) {
  for (const auto& [key, value] : body.items()) {
    (void)value;
    if (key == "dimensions") invalid_request(key, "'dimensions' is not supported: the model's width is fixed");
    if (!known.count(key)) invalid_request(key, "unknown field '" + key + "'");
  }
}

TextIds token_ids(const json& item, const std::string& param) {
  TextIds ids;
  for (const json& t : item) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX)
      invalid_request(param, "'" + param + "' holds " + t.dump() + ", not a token id");
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  return ids;
}

TextIds text_ids(const json& item, const std::string& param, const tokenizer::Tokenizer* tok, bool special) {
  if (!item.is_string()) return token_ids(item, param);
  if (tok == nullptr)
    invalid_request(param, "'" + param + "' is text, but the model has no tokenizer.json: send token ids");
  TextIds ids;
  for (int64_t id : tok->encode(item.get<std::string>(), special)) ids.push_back(static_cast<int32_t>(id));
  return ids;
}

// A string, a list of token ids, a list of strings or a list of token-id lists.
std::vector<TextIds> texts(const json& v, const std::string& param, const tokenizer::Tokenizer* tok, bool special) {
  if (v.is_string()) return {text_ids(v, param, tok, special)};
  if (!v.is_array() || v.empty())
    invalid_request(param, "'" + param + "' must be a string or a non-empty list (of strings or token ids)");
  if (v[0].is_number_integer()) return {token_ids(v, param)};
  std::vector<TextIds> out;
  for (size_t i = 0; i < v.size(); ++i) {
    const std::string where = param + "[" + std::to_string(i) + "]";
    if (!v[i].is_string() && !v[i].is_array())
      invalid_request(param, "'" + where + "' must be a string or a list of token ids");
    out.push_back(text_ids(v[i], where, tok, special));
  }
  return out;
}

}  // namespace

EmbeddingsRequest parse_embeddings_request(const std::string& text, const std::string& served_model,
                                           const tokenizer::Tokenizer* tok, bool special_tokens) {
  const json body = parse_body(text);
  check_model(body, served_model);
  refuse_unknown(body, {"model", "input", "encoding_format", "user", "outputs", "input_type"});
  if (!body.contains("input")) invalid_request("input", "'input' is required");
  EmbeddingsRequest r;
  r.inputs = texts(body["input"], "input", tok, special_tokens);
  const std::string format = body.value("encoding_format", std::string("float"));
  if (format != "float" && format != "base64")
    invalid_request("encoding_format", "'encoding_format' must be \"float\" or \"base64\", got \"" + format + "\"");
  r.base64 = format == "base64";
  if (body.contains("outputs")) {
    const json& o = body["outputs"];
    if (!o.is_array() || o.empty()) invalid_request("outputs", "'outputs' must be a non-empty list");
    r.dense = false;
    for (const json& item : o) {
      const std::string name = item.is_string() ? item.get<std::string>() : item.dump();
      if (name == "dense") r.dense = true;
      else if (name == "sparse") r.sparse = true;
      else if (name == "colbert") r.colbert = true;
      else invalid_request("outputs", "unknown output '" + name + "' (dense, sparse, colbert)");
    }
  }
  const std::string type = body.value("input_type", std::string("document"));
  if (type != "document" && type != "query")
    invalid_request("input_type", "'input_type' must be \"document\" or \"query\", got \"" + type + "\"");
  r.query = type == "query";
  return r;
}

ScoreRequest parse_score_request(const std::string& text, const std::string& served_model,
                                 const tokenizer::Tokenizer* tok, bool special_tokens) {
  const json body = parse_body(text);
  check_model(body, served_model);
  refuse_unknown(body, {"model", "query", "queries", "documents", "user"});
  if (body.contains("query") == body.contains("queries"))
    invalid_request("query", "give one of 'query' (a text) or 'queries' (a list of texts)");
  if (!body.contains("documents")) invalid_request("documents", "'documents' is required");
  ScoreRequest r;
  if (body.contains("query")) {
    const json& q = body["query"];
    if (!q.is_string() && !(q.is_array() && (q.empty() || q[0].is_number_integer())))
      invalid_request("query", "'query' must be one text: a string or a list of token ids");
    r.queries = {text_ids(q, "query", tok, special_tokens)};
  } else {
    r.queries = texts(body["queries"], "queries", tok, special_tokens);
  }
  r.documents = texts(body["documents"], "documents", tok, special_tokens);
  return r;
}

std::string base64_floats(const std::vector<float>& values) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * sizeof(float), '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());  // little-endian hosts only (x86-64, aarch64)
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 2]);
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < bytes.size() ? kAlphabet[v & 63] : '=');
  }
  return out;
}

}  // namespace fk::serve
