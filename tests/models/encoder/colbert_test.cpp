// ColBERT (a BERT with HF_ColBERT's projection) beyond the golden check: the BERT config and
// its ColBERT settings with their refusals, the upstream weight names, ColBERT's query and
// document formatting, the queries' [MASK] rows that are no key (a query's real rows encode
// the same with and without its padding), packing, the skiplist, MaxSim scores against a
// host computation, and named errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "models/encoder/colbert_encode.h"
#include "models/encoder/embed_batch.h"
#include "models/registry.h"

namespace fk::models::encoder {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string tiny_with(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(std::string(resolve_model("tiny-colbertv2").config_json));
  edit(j);
  return j.dump();
}

std::unique_ptr<XlmRobertaModel> loaded_tiny(int64_t max_tokens = 256) {
  auto m = XlmRobertaModel::from_config(resolve_model("tiny-colbertv2").config_json, "tiny-colbertv2");
  auto* model = dynamic_cast<XlmRobertaModel*>(m.release());
  LoadOptions o;
  o.dtype = DType::bf16;
  o.max_tokens = max_tokens;
  o.max_seqs = 16;
  o.seed = 7;
  model->load(o);
  return std::unique_ptr<XlmRobertaModel>(model);
}

TEST(ColbertConfig, ParsesThePresets) {
  const XlmRobertaConfig c = parse_xlm_roberta_config(resolve_model("colbertv2").config_json, "colbertv2");
  EXPECT_EQ(c.family, EncoderFamily::bert);
  EXPECT_EQ(c.position_offset(), 0);
  EXPECT_EQ(c.max_tokens_per_sequence(), 512);
  EXPECT_EQ(c.pad_token_id, 0);
  EXPECT_EQ(c.type_vocab_size, 2);
  ASSERT_TRUE(c.colbert.has_value());  // ColBERTv2's defaults: the config names HF_ColBERT only
  EXPECT_EQ(c.colbert->dim, 128);
  EXPECT_EQ(c.colbert->query_maxlen, 32);
  EXPECT_EQ(c.colbert->doc_maxlen, 180);
  EXPECT_FALSE(c.colbert->attend_to_mask_tokens);
  EXPECT_EQ(c.colbert->mask_token_id, 103);
  EXPECT_EQ(c.colbert->skiplist.size(), 32u);  // string.punctuation
  const XlmRobertaConfig t = parse_xlm_roberta_config(resolve_model("tiny-colbertv2").config_json, "tiny");
  EXPECT_EQ(t.colbert->dim, 32);
  EXPECT_EQ(t.colbert->skiplist, (std::vector<int32_t>{10, 11, 12, 13, 14}));
  // A plain BERT config: no ColBERT settings.
  const XlmRobertaConfig plain = parse_xlm_roberta_config(tiny_with([](nlohmann::json& j) {
    j.erase("colbert");
    j["architectures"] = {"BertModel"};
  }), "plain");
  EXPECT_FALSE(plain.colbert.has_value());
}

TEST(ColbertConfig, RefusesWhatItDoesNotRun) {
  auto refused = [](const std::function<void(nlohmann::json&)>& edit) {
    return error_of([&] { parse_xlm_roberta_config(tiny_with(edit), "cfg"); });
  };
  EXPECT_NE(refused([](auto& j) { j.erase("colbert"); }).find("the skiplist's id 999 is outside the vocabulary of 128"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["colbert"]["query_maxlen"] = 3; }).find("must be at least 4"), std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["colbert"]["doc_maxlen"] = 49; }).find("must fit the 48 positions"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["colbert"]["skiplist"] = {5, 200}; }).find("colbert.skiplist holds 200"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["colbert"]["dim"] = "wide"; }).find("colbert.dim must be an integer"),
            std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["model_type"] = "xlm-roberta"; }).find("needs a BERT config"), std::string::npos);
  EXPECT_NE(refused([](auto& j) { j["model_type"] = "roberta"; }).find("not a BERT-family encoder config"),
            std::string::npos);
}

TEST(ColbertModel, DeclaresTheUpstreamWeightNames) {
  auto m = XlmRobertaModel::from_config(resolve_model("colbertv2").config_json, "colbertv2");
  const auto decls = m->weights();
  EXPECT_EQ(decls.front().name, "bert.embeddings.word_embeddings.weight");
  EXPECT_EQ(decls.back().name, "linear.weight");
  EXPECT_EQ(decls.back().shape, (std::vector<int64_t>{128, 768}));
  EXPECT_EQ(m->architecture(), "bert");
  for (const auto& d : decls) EXPECT_EQ(d.name.find("sparse_linear"), std::string::npos) << d.name;
}

TEST(ColbertFormat, QueriesArePaddedWithMaskAndDocumentsTruncated) {
  const ColbertSettings s = *parse_xlm_roberta_config(resolve_model("tiny-colbertv2").config_json, "t").colbert;
  const ColbertInput q = colbert_format({20, 21, 22}, ColbertSide::query, s);
  EXPECT_EQ(q.ids, (std::vector<int32_t>{4, 1, 20, 21, 22, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6}));
  EXPECT_EQ(q.keys, 6);
  std::vector<int32_t> long_text(40, 30);
  const ColbertInput ql = colbert_format(long_text, ColbertSide::query, s);
  EXPECT_EQ(ql.ids.size(), 16u);
  EXPECT_EQ(ql.ids.back(), 5);  // [SEP] closes the truncated query: no padding left
  EXPECT_EQ(ql.keys, 16);
  const ColbertInput d = colbert_format(long_text, ColbertSide::document, s);
  EXPECT_EQ(d.ids.size(), 24u);
  EXPECT_EQ(d.ids[1], 2);
  EXPECT_EQ(d.keys, 24);
  EXPECT_EQ(colbert_format({}, ColbertSide::document, s).ids, (std::vector<int32_t>{4, 2, 5}));
  ColbertSettings attend = s;
  attend.attend_to_mask_tokens = true;
  EXPECT_EQ(colbert_format({20}, ColbertSide::query, attend).keys, 16);
}

TEST(ColbertEncode, MaskRowsAreNoKeys) {
  // The real rows of a padded query encode exactly as the same rows without the padding.
  auto model = loaded_tiny();
  const std::vector<int32_t> real = {4, 1, 20, 33, 47, 5};
  std::vector<int32_t> padded = real;
  padded.resize(16, 6);
  const auto with_padding = embed_batch(*model, {padded}, {.key_lens = {6}});
  const auto alone = embed_batch(*model, {real});
  for (size_t i = 0; i < real.size() * 32; ++i)
    ASSERT_EQ(with_padding[0].colbert[i], alone[0].colbert[i]) << "element " << i;
  // Attended, the padding changes them.
  const auto attended = embed_batch(*model, {padded});
  EXPECT_NE(attended[0].colbert[0], alone[0].colbert[0]);
}

TEST(ColbertEncode, PackingSkiplistAndScores) {
  auto model = loaded_tiny();
  const std::vector<std::vector<int32_t>> queries = {{20, 21}, {40, 41, 42, 43, 44, 45}};
  const std::vector<std::vector<int32_t>> docs = {{30, 10, 31, 11}, {}, {50, 51, 52, 53, 54, 55, 56, 12}};
  const auto q = colbert_encode(*model, queries, ColbertSide::query);
  const auto d = colbert_encode(*model, docs, ColbertSide::document);
  // Alone equals in a batch.
  const auto q1 = colbert_encode(*model, {queries[1]}, ColbertSide::query);
  EXPECT_EQ(q1[0].vectors, q[1].vectors);
  // The skiplist's rows give no vector: [CLS] [D] 30 31 [SEP] of the first document.
  EXPECT_EQ(d[0].rows, (std::vector<int32_t>{0, 1, 2, 4, 6}));
  EXPECT_EQ(d[1].rows.size(), 3u);
  for (const auto& v : q)
    for (size_t r = 0; r < v.rows.size(); ++r) {
      double ss = 0;
      for (int64_t j = 0; j < 32; ++j) ss += static_cast<double>(v.vectors[r * 32 + j]) * v.vectors[r * 32 + j];
      EXPECT_NEAR(ss, 1.0, 1e-5);
    }
  const std::vector<float> scores = colbert_scores(*model, q, d);
  ASSERT_EQ(scores.size(), 6u);
  for (size_t a = 0; a < q.size(); ++a)
    for (size_t b = 0; b < d.size(); ++b) {
      double want = 0;
      for (size_t i = 0; i < q[a].rows.size(); ++i) {
        double best = -1e30;
        for (size_t j = 0; j < d[b].rows.size(); ++j) {
          double dot = 0;
          for (int64_t x = 0; x < 32; ++x) dot += static_cast<double>(q[a].vectors[i * 32 + x]) * d[b].vectors[j * 32 + x];
          best = std::max(best, dot);
        }
        want += best;
      }
      EXPECT_NEAR(scores[a * d.size() + b], want, 1e-4) << a << ", " << b;
    }
}

TEST(ColbertModel, ReadsAPytorchModelBinAsItsSafetensors) {
  // colbert_bin/ holds the golden checkpoint as torch.save wrote older HF checkpoints
  // (pytorch_model.bin, an OrderedDict of bf16 tensors): the same vectors, bit for bit.
  auto load = [](const std::string& dir) {
    std::unique_ptr<Model> m = create_model(dir);
    LoadOptions o;
    o.dtype = DType::bf16;
    o.checkpoint = dir;
    o.max_tokens = 64;
    o.max_seqs = 4;
    m->load(o);
    return m;
  };
  const std::string data = std::string(FK_SOURCE_DIR) + "/tests/data/models/encoders/";
  auto st = load(data + "colbert"), bin = load(data + "colbert_bin");
  const std::vector<std::vector<int32_t>> docs = {{30, 10, 31}, {50, 51, 52, 53}};
  const auto a = colbert_encode(dynamic_cast<XlmRobertaModel&>(*st), docs, ColbertSide::document);
  const auto b = colbert_encode(dynamic_cast<XlmRobertaModel&>(*bin), docs, ColbertSide::document);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].vectors, b[i].vectors) << i;
}

TEST(ColbertEncode, ErrorsAreNamed) {
  auto model = loaded_tiny();
  EXPECT_NE(error_of([&] { colbert_encode(*model, {{20, 300}}, ColbertSide::query); })
                .find("colbert: text 0 token 1 has id 300, outside the vocabulary of 128"),
            std::string::npos);
  EXPECT_NE(error_of([&] { embed_batch(*model, {{4, 5}}, {.key_lens = {3}}); })
                .find("sequence 0 has 2 tokens and 3 attention keys"),
            std::string::npos);
  auto bge = XlmRobertaModel::from_config(resolve_model("tiny-bge-m3").config_json, "tiny-bge-m3");
  auto* b = dynamic_cast<XlmRobertaModel*>(bge.get());
  LoadOptions o;
  o.dtype = DType::bf16;
  o.max_tokens = 64;
  o.max_seqs = 4;
  b->load(o);
  EXPECT_NE(error_of([&] { colbert_encode(*b, {{20}}, ColbertSide::query); }).find("has no ColBERT projection"),
            std::string::npos);
}

}  // namespace
}  // namespace fk::models::encoder
