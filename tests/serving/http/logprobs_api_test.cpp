// Logprobs over HTTP: /v1/completions (legacy format) and /v1/chat/completions (chat
// format), whole and streamed, equal to the engine's own logprobs; the token texts and
// offsets follow the tokenizer; bad values get OpenAI-style 400s.
#include <gtest/gtest.h>

#include <cmath>

#include "serving/generate/engine.h"
#include "serving/http/serve_test_server.h"

namespace fk::serve {
namespace {

using nlohmann::json;
using fixtures::TestServer;
using fixtures::TextModelDir;

class LogprobsApi : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new TextModelDir("logprobs-api");
    server_ = new TestServer(model_->engine());
  }
  static void TearDownTestSuite() {
    delete server_;
    delete model_;
  }
  static TextModelDir* model_;
  static TestServer* server_;
};
TextModelDir* LogprobsApi::model_ = nullptr;
TestServer* LogprobsApi::server_ = nullptr;

const json kGreedy = {{"max_tokens", 10}, {"temperature", 0}, {"ignore_eos", true}};

// The engine's logprobs for the prompt, greedy.
std::vector<engine::TokenLogprobs> engine_logprobs(const engine::EngineConfig& config, const std::vector<int64_t>& prompt,
                                                   int32_t k, std::vector<int64_t>* tokens) {
  engine::Engine e(config);
  engine::SamplingParams sp;
  sp.temperature = 0;
  sp.max_tokens = 10;
  sp.ignore_eos = true;
  sp.logprobs = k;
  auto g = e.generate({prompt}, sp)[0];
  *tokens = g.output_tokens;
  return g.output_logprobs;
}

int64_t characters(const std::string& s) {
  int64_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

TEST_F(LogprobsApi, CompletionLogprobsAreTheEnginesInTheLegacyFormat) {
  const auto tok = tokenizer::Tokenizer::from_file(fixtures::test_tokenizer_path());
  json body = kGreedy;
  body["prompt"] = "The quick brown fox";
  body["logprobs"] = 3;
  int status = 0;
  const json r = server_->post("/v1/completions", body, &status);
  ASSERT_EQ(status, 200) << r.dump();
  const json& lp = r["choices"][0]["logprobs"];
  const auto ids = r["choices"][0]["token_ids"].get<std::vector<int64_t>>();
  ASSERT_EQ(ids.size(), 10u);
  std::vector<int64_t> engine_tokens;
  const auto want = engine_logprobs(model_->engine(), tok.encode("The quick brown fox"), 3, &engine_tokens);
  EXPECT_EQ(ids, engine_tokens);
  ASSERT_EQ(lp["tokens"].size(), 10u) << lp.dump();
  int64_t offset = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t one[] = {ids[i]};
    const std::string text = tok.decode(one);
    EXPECT_EQ(lp["tokens"][i], text);
    EXPECT_FLOAT_EQ(lp["token_logprobs"][i].get<float>(), want[i].logprob) << i;
    EXPECT_EQ(lp["text_offset"][i], offset);
    offset += characters(text);
    // The 3 most likely plus the sampled one (greedy: it is the first of them).
    const json& top = lp["top_logprobs"][i];
    EXPECT_LE(top.size(), 3u);
    ASSERT_TRUE(top.contains(text));
    for (size_t k = 0; k < 3; ++k) {
      const int64_t alt[] = {want[i].top_ids[k]};
      if (top.contains(tok.decode(alt)))
        EXPECT_GE(top[tok.decode(alt)].get<float>(), want[i].top_logprobs[k]) << "texts shared by two ids keep the likelier";
    }
    EXPECT_FLOAT_EQ(top[text].get<float>(), want[i].logprob);
    EXPECT_LE(want[i].logprob, 0.f);
  }
  EXPECT_EQ(characters(r["choices"][0]["text"].get<std::string>()), offset);
}

TEST_F(LogprobsApi, StreamedCompletionLogprobsJoinToTheWholeAnswers) {
  json body = kGreedy;
  body["prompt"] = "Once upon a time";
  body["logprobs"] = 2;
  const json whole = server_->post("/v1/completions", body)["choices"][0]["logprobs"];
  body["stream"] = true;
  json joined = {{"tokens", json::array()}, {"token_logprobs", json::array()}, {"top_logprobs", json::array()},
                 {"text_offset", json::array()}};
  for (const json& e : server_->post_stream("/v1/completions", body)) {
    const json& lp = e["choices"][0]["logprobs"];
    ASSERT_TRUE(lp.is_object()) << e.dump();
    for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"})
      for (const json& x : lp[key]) joined[key].push_back(x);
  }
  EXPECT_EQ(joined, whole);
}

TEST_F(LogprobsApi, ChatLogprobsInTheChatFormatWholeAndStreamed) {
  json body = kGreedy;
  body["messages"] = json::array({{{"role", "user"}, {"content", "Wie spät ist es? 🕐"}}});
  body["logprobs"] = true;
  body["top_logprobs"] = 2;
  int status = 0;
  const json r = server_->post("/v1/chat/completions", body, &status);
  ASSERT_EQ(status, 200) << r.dump();
  const json& content = r["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 10u) << r.dump();
  std::string joined_tokens;
  for (const json& c : content) {
    const std::string token = c["token"];
    joined_tokens += token;
    std::vector<int> bytes;
    for (unsigned char ch : token) bytes.push_back(ch);
    EXPECT_EQ(c["bytes"].get<std::vector<int>>(), bytes);
    ASSERT_EQ(c["top_logprobs"].size(), 2u);
    EXPECT_FLOAT_EQ(c["logprob"].get<float>(), c["top_logprobs"][0]["logprob"].get<float>()) << "greedy";
    EXPECT_EQ(c["token"], c["top_logprobs"][0]["token"]);
    EXPECT_GE(c["top_logprobs"][0]["logprob"].get<float>(), c["top_logprobs"][1]["logprob"].get<float>());
  }
  // Whole characters decode the same one token at a time (random weights also make pieces
  // of characters, which decode to U+FFFD alone).
  if (joined_tokens.find("\xEF\xBF\xBD") == std::string::npos)
    EXPECT_EQ(joined_tokens, r["choices"][0]["message"]["content"].get<std::string>());

  body["stream"] = true;
  json streamed = json::array();
  for (const json& e : server_->post_stream("/v1/chat/completions", body))
    if (e["choices"][0]["logprobs"].is_object())
      for (const json& c : e["choices"][0]["logprobs"]["content"]) streamed.push_back(c);
  EXPECT_EQ(streamed, content);
}

TEST_F(LogprobsApi, WithoutLogprobsTheFieldIsNull) {
  json body = kGreedy;
  body["prompt"] = "Hello";
  EXPECT_TRUE(server_->post("/v1/completions", body)["choices"][0]["logprobs"].is_null());
  body["logprobs"] = nullptr;
  EXPECT_TRUE(server_->post("/v1/completions", body)["choices"][0]["logprobs"].is_null());
  json chat = kGreedy;
  chat["messages"] = json::array({{{"role", "user"}, {"content", "Hi"}}});
  chat["logprobs"] = false;
  EXPECT_TRUE(server_->post("/v1/chat/completions", chat)["choices"][0]["logprobs"].is_null());
}

TEST_F(LogprobsApi, BadValuesGetOpenAiErrors) {
  struct Case {
    const char* path;
    json extra;
    const char* param;
  };
  const json messages = json::array({{{"role", "user"}, {"content", "Hi"}}});
  const std::vector<Case> cases = {
      {"/v1/completions", {{"logprobs", 21}}, "logprobs"},
      {"/v1/completions", {{"logprobs", -1}}, "logprobs"},
      {"/v1/completions", {{"logprobs", "5"}}, "logprobs"},
      {"/v1/completions", {{"logprobs", true}}, "logprobs"},
      {"/v1/completions", {{"logprobs", 2.5}}, "logprobs"},
      {"/v1/chat/completions", {{"logprobs", 5}}, "logprobs"},
      {"/v1/chat/completions", {{"logprobs", true}, {"top_logprobs", 21}}, "top_logprobs"},
      {"/v1/chat/completions", {{"logprobs", true}, {"top_logprobs", -2}}, "top_logprobs"},
      {"/v1/chat/completions", {{"logprobs", true}, {"top_logprobs", "2"}}, "top_logprobs"},
      {"/v1/chat/completions", {{"top_logprobs", 3}}, "top_logprobs"},
  };
  for (const Case& c : cases) {
    json body = kGreedy;
    if (std::string(c.path) == "/v1/completions") body["prompt"] = "Hello";
    else body["messages"] = messages;
    body.update(c.extra);
    int status = 0;
    const json r = server_->post(c.path, body, &status);
    EXPECT_EQ(status, 400) << c.path << " " << c.extra.dump() << " -> " << r.dump();
    EXPECT_EQ(r["error"]["param"], c.param) << c.extra.dump();
    EXPECT_EQ(r["error"]["type"], "invalid_request_error");
  }
}

// Token-id prompts on a model without a tokenizer: token texts are "token_id:N".
TEST(LogprobsApiWithoutTokenizer, TokensAreNamedByTheirIds) {
  TestServer server(fixtures::tiny_engine());
  const json r = server.post("/v1/completions", {{"prompt", {1, 2, 3}}, {"max_tokens", 4}, {"temperature", 0},
                                                 {"ignore_eos", true}, {"logprobs", 1}});
  const json& lp = r["choices"][0]["logprobs"];
  ASSERT_EQ(lp["tokens"].size(), 4u) << r.dump();
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(lp["tokens"][i], "token_id:" + std::to_string(r["choices"][0]["token_ids"][i].get<int64_t>()));
    EXPECT_LT(lp["token_logprobs"][i].get<double>(), 0.0);
  }
}

}  // namespace
}  // namespace fk::serve
