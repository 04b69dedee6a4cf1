#include "serving/embed/encoder_service.h"

#include <algorithm>

#include "fk/status.h"
#include "models/encoder/colbert_encode.h"
#include "models/encoder/embed_batch.h"
#include "serving/http/openai_api.h"

namespace fk::serve {
namespace {

using nlohmann::json;
using models::encoder::ColbertSide;
using models::encoder::ColbertVectors;

// [begin, end) runs of texts whose (formatted) lengths fit one forward pass.
std::vector<std::pair<size_t, size_t>> batches(const std::vector<int64_t>& lengths, int64_t max_tokens,
                                               int64_t max_seqs) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t begin = 0;
  int64_t tokens = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (i > begin && (tokens + lengths[i] > max_tokens || static_cast<int64_t>(i - begin) >= max_seqs)) {
      out.push_back({begin, i});
      begin = i;
      tokens = 0;
    }
    tokens += lengths[i];
  }
  if (begin < lengths.size()) out.push_back({begin, lengths.size()});
  return out;
}

json vector_json(const std::vector<float>& v, bool base64) { return base64 ? json(base64_floats(v)) : json(v); }

json rows_json(const std::vector<float>& m, int64_t width, bool base64) {
  if (base64) return base64_floats(m);
  json rows = json::array();
  for (size_t r = 0; r * width < m.size(); ++r)
    rows.push_back(std::vector<float>(m.begin() + static_cast<int64_t>(r) * width,
                                      m.begin() + static_cast<int64_t>(r + 1) * width));
  return rows;
}

json usage(int64_t tokens) { return json{{"prompt_tokens", tokens}, {"total_tokens", tokens}}; }

}  // namespace

EncoderService::EncoderService(std::unique_ptr<models::Model> model, std::unique_ptr<tokenizer::Tokenizer> tok,
                               std::string served_model)
    : model_(std::move(model)),
      encoder_(dynamic_cast<models::encoder::XlmRobertaModel*>(model_.get())),
      tok_(std::move(tok)),
      served_model_(std::move(served_model)) {
  FK_CHECK(encoder_ != nullptr && encoder_->loaded(), "serve: the encoder service needs a loaded text encoder");
}

void EncoderService::check_texts(const std::vector<TextIds>& texts, const std::string& param) const {
  const auto& c = encoder_->config();
  for (size_t t = 0; t < texts.size(); ++t) {
    const std::string where = param + "[" + std::to_string(t) + "]";
    for (int32_t id : texts[t])
      if (id >= c.vocab_size)
        invalid_request(param, "'" + where + "' holds token id " + std::to_string(id) + ", outside the vocabulary of " +
                                   std::to_string(c.vocab_size));
    if (colbert()) continue;  // ColBERT truncates to its query_maxlen / doc_maxlen
    if (texts[t].empty()) invalid_request(param, "'" + where + "' has no tokens");
    if (static_cast<int64_t>(texts[t].size()) > c.max_tokens_per_sequence())
      invalid_request(param, "'" + where + "' has " + std::to_string(texts[t].size()) + " tokens, more than the " +
                                 std::to_string(c.max_tokens_per_sequence()) + " the model's positions hold");
  }
}

json EncoderService::embeddings(const std::string& body) {
  const EmbeddingsRequest r = parse_embeddings_request(body, served_model_, tok_.get(), !colbert());
  check_texts(r.inputs, "input");
  const auto& c = encoder_->config();
  if (colbert() && (r.sparse || (r.dense && r.colbert)))
    invalid_request("outputs", "a ColBERT model's only output is its vectors (\"embedding\"); drop 'outputs'");
  if (!colbert() && r.query) invalid_request("input_type", "'input_type' is for a ColBERT model");
  if (!colbert() && (r.sparse || r.colbert) && !encoder_->has_heads())
    invalid_request("outputs", "the model has no BGE-M3 sparse/ColBERT heads: ask for \"dense\" only");
  const auto& lo = encoder_->load_options();
  std::vector<int64_t> lengths;
  for (const TextIds& t : r.inputs)
    lengths.push_back(colbert() ? std::min<int64_t>(static_cast<int64_t>(t.size()) + 3,
                                                    r.query ? c.colbert->query_maxlen : c.colbert->doc_maxlen)
                                : static_cast<int64_t>(t.size()));
  if (colbert() && r.query)
    for (int64_t& n : lengths) n = c.colbert->query_maxlen;
  json data = json::array();
  int64_t tokens = 0;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [begin, end] : batches(lengths, lo.max_tokens, lo.max_seqs)) {
    const std::vector<TextIds> part(r.inputs.begin() + static_cast<int64_t>(begin),
                                    r.inputs.begin() + static_cast<int64_t>(end));
    if (colbert()) {
      const auto vecs = models::encoder::colbert_encode(*encoder_, part, r.query ? ColbertSide::query
                                                                                 : ColbertSide::document);
      for (size_t i = 0; i < vecs.size(); ++i) {
        tokens += static_cast<int64_t>(vecs[i].ids.size());
        data.push_back({{"object", "embedding"}, {"index", begin + i},
                        {"embedding", rows_json(vecs[i].vectors, c.colbert->dim, r.base64)}});
      }
      continue;
    }
    const auto outs = models::encoder::embed_batch(*encoder_, part);
    for (size_t i = 0; i < outs.size(); ++i) {
      tokens += outs[i].tokens;
      json item{{"object", "embedding"}, {"index", begin + i}};
      if (r.dense) item["embedding"] = vector_json(outs[i].dense, r.base64);
      if (r.sparse) {
        json lex = json::object();
        for (const auto& [id, w] : outs[i].lexical_weights) lex[std::to_string(id)] = w;
        item["lexical_weights"] = std::move(lex);
      }
      if (r.colbert) item["colbert_vecs"] = rows_json(outs[i].colbert, c.hidden_size, r.base64);
      data.push_back(std::move(item));
    }
  }
  return json{{"object", "list"}, {"data", std::move(data)}, {"model", served_model_}, {"usage", usage(tokens)}};
}

json EncoderService::score(const std::string& body) {
  const ScoreRequest r = parse_score_request(body, served_model_, tok_.get(), !colbert());
  check_texts(r.queries, "queries");
  check_texts(r.documents, "documents");
  if (!colbert() && !encoder_->has_heads())
    invalid_request("model", "the model has no multi-vector output to score with (BGE-M3's ColBERT head, or a "
                             "ColBERT model)");
  const auto& c = encoder_->config();
  const auto& lo = encoder_->load_options();
  int64_t tokens = 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto encode = [&](const std::vector<TextIds>& texts, ColbertSide side) {
    std::vector<int64_t> lengths;
    for (const TextIds& t : texts)
      lengths.push_back(!colbert() ? static_cast<int64_t>(t.size())
                        : side == ColbertSide::query
                            ? c.colbert->query_maxlen
                            : std::min<int64_t>(static_cast<int64_t>(t.size()) + 3, c.colbert->doc_maxlen));
    std::vector<ColbertVectors> out;
    for (const auto& [begin, end] : batches(lengths, lo.max_tokens, lo.max_seqs)) {
      const std::vector<TextIds> part(texts.begin() + static_cast<int64_t>(begin),
                                      texts.begin() + static_cast<int64_t>(end));
      if (colbert()) {
        for (auto& v : models::encoder::colbert_encode(*encoder_, part, side)) {
          tokens += static_cast<int64_t>(v.ids.size());
          out.push_back(std::move(v));
        }
        continue;
      }
      // BGE-M3's multi-vector head: a vector for every token after the first.
      for (auto& o : models::encoder::embed_batch(*encoder_, part)) {
        tokens += o.tokens;
        ColbertVectors v;
        for (int64_t i = 1; i < o.tokens; ++i) v.rows.push_back(static_cast<int32_t>(i));
        v.vectors = std::move(o.colbert);
        out.push_back(std::move(v));
      }
    }
    return out;
  };
  const auto q = encode(r.queries, ColbertSide::query);
  const auto d = encode(r.documents, ColbertSide::document);
  const int64_t dim = colbert() ? c.colbert->dim : c.hidden_size;
  const std::vector<float> s = models::encoder::maxsim_scores(q, d, dim, lo.device, lo.stream);
  json data = json::array();
  for (size_t a = 0; a < q.size(); ++a)
    for (size_t b = 0; b < d.size(); ++b) {
      double v = s[a * d.size() + b];
      if (!colbert()) v /= std::max<double>(1.0, static_cast<double>(q[a].rows.size()));
      data.push_back({{"object", "score"}, {"query_index", a}, {"index", b}, {"score", v}});
    }
  return json{{"object", "list"}, {"data", std::move(data)}, {"model", served_model_}, {"usage", usage(tokens)}};
}

BatchService encoder_batch_service(std::shared_ptr<EncoderService> service) {
  EncoderService* s = service.get();
  BatchService b;
  b.served_model = s->served_model();
  b.task = s->colbert() ? "score" : "embed";
  b.endpoints = {{"/v1/embeddings", [s](const std::string& body) { return s->embeddings(body); }},
                 {"/v1/score", [s](const std::string& body) { return s->score(body); }}};
  b.owner = std::move(service);
  return b;
}

}  // namespace fk::serve
