#include "cli/embed_colbert.h"

#include <fstream>
#include <random>

#include "fk/status.h"
#include "models/encoder/colbert_encode.h"
#include "text/tokenizer.h"

namespace fk::cli {
namespace {

using nlohmann::json;
using models::encoder::ColbertSide;

std::vector<std::vector<int32_t>> ids_of(const json& items, const char* key,
                                         const std::optional<tokenizer::Tokenizer>& tok) {
  FK_CHECK(items.is_array(), "embed: --input's \"", key, "\" must be a list of texts (token id lists or strings)");
  std::vector<std::vector<int32_t>> out;
  for (size_t i = 0; i < items.size(); ++i) {
    const json& item = items[i];
    std::vector<int32_t> ids;
    if (item.is_string()) {
      FK_CHECK(tok.has_value(), "embed: ", key, "[", i, "] is a string; pass --tokenizer tokenizer.json to tokenize it");
      for (int64_t id : tok->encode(item.get<std::string>(), /*add_special_tokens=*/false))
        ids.push_back(static_cast<int32_t>(id));
    } else {
      FK_CHECK(item.is_array(), "embed: ", key, "[", i, "] is neither a string nor a list of token ids: ", item.dump());
      for (const json& t : item) {
        FK_CHECK(t.is_number_integer(), "embed: ", key, "[", i, "] holds ", t.dump(), ", not a token id");
        ids.push_back(t.get<int32_t>());
      }
    }
    out.push_back(std::move(ids));
  }
  return out;
}

}  // namespace

json colbert_texts(const ColbertEmbedInput& in, const models::encoder::XlmRobertaConfig& config) {
  if (in.input.empty()) {
    FK_CHECK(in.batch > 0 && in.length >= 0, "embed: --batch must be positive and --length not negative");
    std::mt19937_64 rng(in.seed + 1);
    // Past the special ids of a BERT vocabulary ([unused*], [CLS], [SEP], [MASK]: below 1000).
    const int32_t first = config.vocab_size > 2000 ? 1000 : 15;
    std::uniform_int_distribution<int32_t> token(first, static_cast<int32_t>(config.vocab_size - 1));
    auto texts = [&] {
      std::vector<std::vector<int32_t>> t(static_cast<size_t>(in.batch));
      for (auto& ids : t)
        for (int64_t i = 0; i < in.length; ++i) ids.push_back(token(rng));
      return t;
    };
    return json{{"queries", texts()}, {"documents", texts()}};
  }
  std::ifstream f(in.input);
  FK_CHECK(f.good(), "embed: cannot read --input ", in.input);
  json j;
  try {
    f >> j;
  } catch (const json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, "embed: --input ", in.input, " is not valid JSON: ", e.what());
  }
  FK_CHECK(j.is_object() && j.contains("queries") && j.contains("documents"), "embed: a ColBERT model takes --input ",
           "{\"queries\": [...], \"documents\": [...]}; ", in.input, " has neither list");
  std::optional<tokenizer::Tokenizer> tok;
  if (!in.tokenizer.empty()) tok = tokenizer::Tokenizer::from_file(in.tokenizer);
  return json{{"queries", ids_of(j["queries"], "queries", tok)}, {"documents", ids_of(j["documents"], "documents", tok)}};
}

json colbert_embed(models::encoder::XlmRobertaModel& model, const json& texts, bool vectors) {
  const auto queries = texts["queries"].get<std::vector<std::vector<int32_t>>>();
  const auto docs = texts["documents"].get<std::vector<std::vector<int32_t>>>();
  FK_CHECK(!queries.empty() || !docs.empty(), "embed: no queries and no documents");
  const auto q = models::encoder::colbert_encode(model, queries, ColbertSide::query);
  const auto d = models::encoder::colbert_encode(model, docs, ColbertSide::document);
  const int64_t dim = model.config().colbert->dim;
  auto side = [&](const std::vector<models::encoder::ColbertVectors>& items) {
    json out = json::array();
    for (size_t i = 0; i < items.size(); ++i) {
      json r{{"index", i}, {"ids", items[i].ids}, {"vector_rows", items[i].rows}};
      if (vectors) {
        json rows = json::array();
        for (size_t k = 0; k < items[i].rows.size(); ++k)
          rows.push_back(std::vector<float>(items[i].vectors.begin() + static_cast<int64_t>(k) * dim,
                                            items[i].vectors.begin() + static_cast<int64_t>(k + 1) * dim));
        r["colbert_vecs"] = std::move(rows);
      }
      out.push_back(std::move(r));
    }
    return out;
  };
  const std::vector<float> flat = models::encoder::colbert_scores(model, q, d);
  json scores = json::array();
  for (size_t a = 0; a < q.size(); ++a)
    scores.push_back(std::vector<float>(flat.begin() + static_cast<int64_t>(a * d.size()),
                                        flat.begin() + static_cast<int64_t>((a + 1) * d.size())));
  return json{{"queries", side(q)}, {"documents", side(d)}, {"scores", std::move(scores)}};
}

}  // namespace fk::cli
