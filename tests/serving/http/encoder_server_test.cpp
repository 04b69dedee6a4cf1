// fk serve for text encoders over real HTTP (CPU): ColBERT's /v1/score and /v1/embeddings on
// the golden HF_ColBERT checkpoint give transformers' scores and vectors, also when a request
// spans several forward passes; base64 and float encodings agree; BGE-M3's dense, sparse and
// multi-vector outputs and its length-normalised score; OpenAI-style errors naming the field;
// /v1/models, /health and /metrics.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "models/encoder/golden_check.h"
#include "models/registry.h"
#include "serving/embed/encoder_service.h"
#include "serving/http/batch_test_server.h"

namespace fk::serve {
namespace {

using nlohmann::json;

// An encoder server on a golden checkpoint folder, loaded on the CPU for `max_tokens` tokens
// and `max_seqs` texts per forward pass.
class EncoderTestServer : public BatchTestServer {
 public:
  EncoderTestServer(const std::string& dir, int64_t max_tokens, int64_t max_seqs)
      : BatchTestServer(
            encoder_batch_service(std::make_shared<EncoderService>(load(dir, max_tokens, max_seqs), nullptr, "enc"))) {}

 private:
  static std::unique_ptr<models::Model> load(const std::string& dir, int64_t max_tokens, int64_t max_seqs) {
    std::unique_ptr<models::Model> m = models::create_model(dir);
    models::LoadOptions o;
    o.dtype = DType::bf16;
    o.checkpoint = dir;
    o.max_tokens = max_tokens;
    o.max_seqs = max_seqs;
    m->load(o);
    return m;
  }
};

json golden(const std::string& family) {
  json g;
  std::ifstream(test::encoder_golden_dir(family) + "/golden.json") >> g;
  return g;
}

std::vector<float> decode_base64_floats(const std::string& s) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : 63;
  };
  std::string bytes;
  for (size_t i = 0; i + 3 < s.size(); i += 4) {
    const uint32_t v = (value(s[i]) << 18) | (value(s[i + 1]) << 12) | ((s[i + 2] == '=' ? 0 : value(s[i + 2])) << 6) |
                       (s[i + 3] == '=' ? 0 : value(s[i + 3]));
    bytes.push_back(static_cast<char>(v >> 16));
    if (s[i + 2] != '=') bytes.push_back(static_cast<char>((v >> 8) & 255));
    if (s[i + 3] != '=') bytes.push_back(static_cast<char>(v & 255));
  }
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

TEST(EncoderServer, ColbertScoresAsTransformersInOneOrManyPasses) {
  const json g = golden("colbert");
  const auto want = safetensors::File::open(test::encoder_golden_dir("colbert") + "/golden.safetensors");
  const TensorView scores = want.view("scores");
  // 256 tokens and 16 texts: one pass; 40 tokens and 2 texts: every request in several.
  for (const auto& [tokens, seqs] : {std::pair<int64_t, int64_t>{256, 16}, {40, 2}}) {
    SCOPED_TRACE("max_tokens " + std::to_string(tokens));
    EncoderTestServer server(test::encoder_golden_dir("colbert"), tokens, seqs);
    const auto [status, body] =
        server.post("/v1/score", {{"model", "enc"}, {"queries", g["queries"]}, {"documents", g["documents"]}});
    ASSERT_EQ(status, 200) << body;
    EXPECT_EQ(body["object"], "list");
    const size_t nq = g["queries"].size(), nd = g["documents"].size();
    ASSERT_EQ(body["data"].size(), nq * nd);
    for (const json& s : body["data"]) {
      const int64_t a = s["query_index"], b = s["index"];
      EXPECT_NEAR(s["score"].get<double>(), get(scores, a, b), 0.08) << a << ", " << b;
    }
    EXPECT_GT(body["usage"]["prompt_tokens"].get<int64_t>(), 0);
  }
}

TEST(EncoderServer, ColbertEmbeddingsAsQueryOrDocumentInFloatOrBase64) {
  EncoderTestServer server(test::encoder_golden_dir("colbert"), 256, 16);
  const json input = json::array({json::array({20, 21, 22}), json::array({30, 10, 31})});
  auto [st, as_query] = server.post("/v1/embeddings", {{"model", "enc"}, {"input", input}, {"input_type", "query"}});
  ASSERT_EQ(st, 200) << as_query;
  ASSERT_EQ(as_query["data"].size(), 2u);
  EXPECT_EQ(as_query["data"][0]["embedding"].size(), 16u);  // query_maxlen vectors
  EXPECT_EQ(as_query["data"][0]["embedding"][0].size(), 32u);
  auto [st2, as_doc] = server.post("/v1/embeddings", {{"model", "enc"}, {"input", input}});
  ASSERT_EQ(st2, 200) << as_doc;
  EXPECT_EQ(as_doc["data"][1]["embedding"].size(), 5u);  // [CLS] [D] 30 31 [SEP]: 10 is skiplisted
  auto [st3, b64] = server.post("/v1/embeddings", {{"model", "enc"}, {"input", input}, {"encoding_format", "base64"}});
  ASSERT_EQ(st3, 200) << b64;
  const std::vector<float> floats = decode_base64_floats(b64["data"][1]["embedding"].get<std::string>());
  ASSERT_EQ(floats.size(), 5u * 32u);
  for (size_t i = 0; i < floats.size(); ++i)
    ASSERT_EQ(floats[i], as_doc["data"][1]["embedding"][i / 32][i % 32].get<float>()) << i;
}

TEST(EncoderServer, BgeM3OutputsAndNormalisedScore) {
  const json g = golden("xlm_roberta");
  const auto want = safetensors::File::open(test::encoder_golden_dir("xlm_roberta") + "/golden.safetensors");
  EncoderTestServer server(test::encoder_golden_dir("xlm_roberta"), 256, 16);
  auto [st, body] = server.post("/v1/embeddings", {{"model", "enc"}, {"input", g["sequences"]},
                                                   {"outputs", {"dense", "sparse", "colbert"}}});
  ASSERT_EQ(st, 200) << body;
  ASSERT_EQ(body["data"].size(), g["sequences"].size());
  for (size_t s = 0; s < body["data"].size(); ++s) {
    const auto dense = body["data"][s]["embedding"].get<std::vector<float>>();
    EXPECT_GE(test::agreement(dense.data(), want.view("dense"), static_cast<int64_t>(s), 128).cosine, 0.999) << s;
    EXPECT_TRUE(body["data"][s].contains("lexical_weights")) << s;
    EXPECT_EQ(body["data"][s]["colbert_vecs"].size(), g["sequences"][s].size() - 1) << s;
  }
  // The score of sequence 2 against sequence 3: MaxSim of the ColBERT vectors over the
  // query's vector count, computed here from the returned vectors.
  const json& q = body["data"][2]["colbert_vecs"];
  const json& d = body["data"][3]["colbert_vecs"];
  double want_score = 0;
  for (const json& qv : q) {
    double best = -1e30;
    for (const json& dv : d) {
      double dot = 0;
      for (size_t x = 0; x < qv.size(); ++x) dot += qv[x].get<double>() * dv[x].get<double>();
      best = std::max(best, dot);
    }
    want_score += best;
  }
  want_score /= static_cast<double>(q.size());
  auto [st2, score] = server.post("/v1/score", {{"model", "enc"}, {"query", g["sequences"][2]},
                                                {"documents", {g["sequences"][3]}}});
  ASSERT_EQ(st2, 200) << score;
  EXPECT_NEAR(score["data"][0]["score"].get<double>(), want_score, 1e-4);
}

TEST(EncoderServer, ErrorsNameTheField) {
  EncoderTestServer server(test::encoder_golden_dir("colbert"), 256, 16);
  auto expect_error = [&](const std::string& path, const json& body, int status, const std::string& param,
                          const std::string& part) {
    const auto [st, b] = server.post(path, body);
    EXPECT_EQ(st, status) << body;
    ASSERT_TRUE(b.contains("error")) << b;
    EXPECT_EQ(b["error"]["param"], param) << b;
    EXPECT_NE(b["error"]["message"].get<std::string>().find(part), std::string::npos) << b;
  };
  expect_error("/v1/embeddings", {{"model", "enc"}, {"input", "some text"}}, 400, "input", "has no tokenizer.json");
  expect_error("/v1/embeddings", {{"model", "enc"}, {"input", {{20, 500}}}}, 400, "input",
               "'input[0]' holds token id 500, outside the vocabulary of 128");
  expect_error("/v1/embeddings", {{"model", "enc"}, {"input", {20}}, {"dimensions", 8}}, 400, "dimensions",
               "not supported");
  expect_error("/v1/embeddings", {{"model", "enc"}, {"input", {20}}, {"temperature", 1}}, 400, "temperature",
               "unknown field 'temperature'");
  expect_error("/v1/embeddings", {{"model", "enc"}, {"input", {20}}, {"input_type", "passage"}}, 400, "input_type",
               "must be \"document\" or \"query\"");
  expect_error("/v1/embeddings", {{"model", "enc"}, {"input", {20}}, {"outputs", {"sparse"}}}, 400, "outputs",
               "only output is its vectors");
  expect_error("/v1/embeddings", {{"model", "enc"}, {"input", json::array()}}, 400, "input", "non-empty list");
  expect_error("/v1/embeddings", {{"model", "other"}, {"input", {20}}}, 404, "model", "does not exist");
  expect_error("/v1/score", {{"model", "enc"}, {"documents", {{20}}}}, 400, "query", "give one of 'query'");
  expect_error("/v1/score", {{"model", "enc"}, {"query", {20}}}, 400, "documents", "'documents' is required");
}

TEST(EncoderServer, ModelsHealthAndMetrics) {
  EncoderTestServer server(test::encoder_golden_dir("colbert"), 256, 16);
  const json models = json::parse(server.get("/v1/models"));
  EXPECT_EQ(models["data"][0]["id"], "enc");
  EXPECT_EQ(server.get("/health"), "ok\n");
  server.post("/v1/score", {{"model", "enc"}, {"query", {20}}, {"documents", {{21}}}});
  const std::string metrics = server.get("/metrics");
  EXPECT_NE(metrics.find("fk_http_responses_total{class=\"2xx\"}"), std::string::npos) << metrics;
  EXPECT_NE(server.get("/nowhere").find("no route for GET /nowhere"), std::string::npos);
}

}  // namespace
}  // namespace fk::serve
