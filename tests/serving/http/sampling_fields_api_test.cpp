// The sampling fields vLLM users send, over real HTTP on 127.0.0.1 (completions and chat
// completions): presence / frequency / repetition penalties, logit_bias, min_tokens and
// bad_words are accepted and change the tokens; values out of vLLM's ranges, ids outside the
// vocabulary and fields this server does not implement are 400s naming the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serving/http/serve_test_server.h"
#include "text/tokenizer.h"

namespace fk::serve {
namespace {

using nlohmann::json;
using fixtures::TestServer;
using fixtures::TextModelDir;

class SamplingFields : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TextModelDir("sampling-fields");
    server_ = new TestServer(dir_->engine(), 8);
    tok_ = new tokenizer::Tokenizer(tokenizer::Tokenizer::from_file(fixtures::test_tokenizer_path()));
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
    delete tok_;
  }
  static json completion(json body, int* status) {
    body["model"] = "tiny";
    if (!body.contains("prompt")) body["prompt"] = "The quick brown fox";
    if (!body.contains("max_tokens")) body["max_tokens"] = 8;
    body["temperature"] = 0;
    body["ignore_eos"] = true;
    return server_->post("/v1/completions", body, status);
  }
  static json chat(json body, int* status) {
    body["model"] = "tiny";
    body["messages"] = json::array({{{"role", "user"}, {"content", "Hello there"}}});
    if (!body.contains("max_tokens")) body["max_tokens"] = 6;
    body["temperature"] = 0;
    return server_->post("/v1/chat/completions", body, status);
  }
  static std::vector<int64_t> tokens_of(const json& r) { return r["choices"][0]["token_ids"].get<std::vector<int64_t>>(); }
  // A 400 whose error names `param`.
  static void expect_400(const json& r, int status, const std::string& param, const std::string& what) {
    EXPECT_EQ(status, 400) << what << ": " << r.dump();
    EXPECT_EQ(r["error"]["param"], param) << what << ": " << r.dump();
    EXPECT_NE(r["error"]["message"].get<std::string>().find(param), std::string::npos) << what << ": " << r.dump();
  }
  static TextModelDir* dir_;
  static TestServer* server_;
  static tokenizer::Tokenizer* tok_;
};
TextModelDir* SamplingFields::dir_ = nullptr;
TestServer* SamplingFields::server_ = nullptr;
tokenizer::Tokenizer* SamplingFields::tok_ = nullptr;

TEST_F(SamplingFields, LogitBiasForcesATokenOnBothEndpoints) {
  int status = 0;
  const json r = completion({{"logit_bias", {{"123", 100}}}}, &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(tokens_of(r), std::vector<int64_t>(8, 123));
  // The text of six forced tokens on the chat endpoint is the token's text six times.
  const json c = chat({{"logit_bias", {{"123", 100}}}}, &status);
  ASSERT_EQ(status, 200) << c.dump();
  const std::vector<int64_t> id = {123};
  const std::string piece = tok_->decode(id);
  std::string six;
  for (int i = 0; i < 6; ++i) six += piece;
  EXPECT_EQ(c["choices"][0]["message"]["content"], six);
}

TEST_F(SamplingFields, PenaltiesAndMinTokensAreAcceptedAndPenaltiesChangeTokens) {
  int status = 0;
  const json plain = completion({{"max_tokens", 24}}, &status);
  ASSERT_EQ(status, 200) << plain.dump();
  const json body = {{"max_tokens", 24},         {"presence_penalty", 2.0}, {"frequency_penalty", 2.0},
                     {"repetition_penalty", 1.5}, {"min_tokens", 4}};
  const json pen = completion(body, &status);
  ASSERT_EQ(status, 200) << pen.dump();
  EXPECT_EQ(pen["choices"][0]["token_ids"].size(), 24u);
  const json again = completion(body, &status);
  EXPECT_EQ(tokens_of(again), tokens_of(pen)) << "greedy with penalties repeats";
  const json c = chat(body, &status);
  EXPECT_EQ(status, 200) << c.dump();
  // A huge repetition penalty over logits a bias made positive: no output token repeats.
  json all_positive = json::object();
  for (int64_t v = 0; v < tok_->vocab_size(); ++v) all_positive[std::to_string(v)] = 60;
  const json norep = completion({{"max_tokens", 16}, {"repetition_penalty", 1e6}, {"logit_bias", all_positive}}, &status);
  ASSERT_EQ(status, 200) << norep.dump();
  std::vector<int64_t> seen;
  for (int64_t t : tokens_of(norep)) {
    EXPECT_EQ(std::count(seen.begin(), seen.end(), t), 0) << "token " << t << " repeated";
    seen.push_back(t);
  }
}

TEST_F(SamplingFields, BadWordsBanAWordTheBiasWouldForce) {
  // Two words of one token each in the test tokenizer: one as written, one after a space.
  std::string first, second;
  for (int64_t id = 0; id < tok_->vocab_size() && second.empty(); ++id) {
    const std::vector<int64_t> one = {id};
    const std::string text = tok_->decode(one);
    if (text.size() < 2 || !std::all_of(text.begin(), text.end(), [](char ch) { return std::isalpha(static_cast<unsigned char>(ch)); }))
      continue;
    if (tok_->encode(text, false).size() != 1 || tok_->encode(" " + text, false).size() != 1) continue;
    (first.empty() ? first : second) = text;
  }
  ASSERT_FALSE(second.empty()) << "the test tokenizer has no two single-token words";
  const std::vector<int64_t> hello = tok_->encode(first, false), world = tok_->encode(" " + second, false);
  const std::string h = std::to_string(hello[0]), w = std::to_string(world[0]);
  int status = 0;
  const json forced = completion({{"logit_bias", {{h, 100}}}}, &status);
  ASSERT_EQ(tokens_of(forced), std::vector<int64_t>(8, hello[0]));
  const json banned = completion({{"logit_bias", {{h, 100}}}, {"bad_words", {first}}}, &status);
  ASSERT_EQ(status, 200) << banned.dump();
  for (int64_t t : tokens_of(banned)) EXPECT_NE(t, hello[0]);
  // A two-token word: its second token never follows its first (both forced up).
  const json pair = completion({{"max_tokens", 16}, {"logit_bias", {{h, 100}, {w, 100}}}, {"bad_words", {first + " " + second}}},
                               &status);
  ASSERT_EQ(status, 200) << pair.dump();
  const std::vector<int64_t> p = tokens_of(pair);
  for (size_t j = 0; j < p.size(); ++j) {
    EXPECT_TRUE(p[j] == hello[0] || p[j] == world[0]) << j;
    if (j + 1 < p.size()) EXPECT_FALSE(p[j] == hello[0] && p[j + 1] == world[0]) << j;
  }
  const json c = chat({{"bad_words", {first}}, {"logit_bias", {{h, 100}}}}, &status);
  EXPECT_EQ(status, 200) << c.dump();
}

TEST_F(SamplingFields, OutOfRangeValuesAreA400NamingTheField) {
  struct Case {
    json body;
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"presence_penalty", 2.5}}, "presence_penalty"},
      {{{"frequency_penalty", -3}}, "frequency_penalty"},
      {{{"frequency_penalty", "high"}}, "frequency_penalty"},
      {{{"repetition_penalty", 0}}, "repetition_penalty"},
      {{{"repetition_penalty", -1.5}}, "repetition_penalty"},
      {{{"logit_bias", {{"abc", 1}}}}, "logit_bias"},
      {{{"logit_bias", {{"12", "x"}}}}, "logit_bias"},
      {{{"logit_bias", json::array({1, 2})}}, "logit_bias"},
      {{{"logit_bias", {{"99999999", 5}}}}, "logit_bias"},
      {{{"logit_bias", {{"-1", 5}}}}, "logit_bias"},
      {{{"bad_words", {""}}}, "bad_words"},
      {{{"bad_words", {1, 2}}}, "bad_words"},
      {{{"bad_words", "hello"}}, "bad_words"},
      {{{"min_tokens", 9}, {"max_tokens", 8}}, "min_tokens"},
      {{{"min_tokens", -1}}, "min_tokens"},
  };
  for (const Case& c : cases) {
    int status = 0;
    const json r = completion(c.body, &status);
    expect_400(r, status, c.param, "completions " + c.body.dump());
    if (c.param == "min_tokens") continue;
    const json rc = chat(c.body, &status);
    expect_400(rc, status, c.param, "chat " + c.body.dump());
  }
}

TEST_F(SamplingFields, FieldsThisServerDoesNotImplementAreA400NotASilent200) {
  struct Case {
    json body;
    std::string param;
  };
  const std::vector<Case> cases = {
      {{{"best_of", 2}}, "best_of"},
      {{{"suffix", "!"}}, "suffix"},
      {{{"use_beam_search", true}}, "use_beam_search"},
      {{{"length_penalty", 0.5}}, "length_penalty"},
      {{{"prompt_logprobs", 1}}, "prompt_logprobs"},
      {{{"allowed_token_ids", {1, 2}}}, "allowed_token_ids"},
      {{{"guided_json", {{"type", "object"}}}}, "guided_json"},
      {{{"guided_regex", "a+"}}, "guided_regex"},
      {{{"guided_choice", {"a", "b"}}}, "guided_choice"},
      {{{"structured_outputs", {{"regex", "a+"}}}}, "structured_outputs"},
      {{{"response_format", {{"type", "json_object"}}}}, "response_format"},
      {{{"truncate_prompt_tokens", 4}}, "truncate_prompt_tokens"},
      {{{"include_stop_str_in_output", true}}, "include_stop_str_in_output"},
  };
  for (const Case& c : cases) {
    int status = 0;
    const json r = completion(c.body, &status);
    expect_400(r, status, c.param, "completions " + c.body.dump());
    const json rc = chat(c.body, &status);
    expect_400(rc, status, c.param, "chat " + c.body.dump());
  }
  // Their neutral values are accepted.
  int status = 0;
  const json ok = completion({{"best_of", 1},
                              {"suffix", ""},
                              {"use_beam_search", false},
                              {"length_penalty", 1.0},
                              {"response_format", {{"type", "text"}}},
                              {"include_stop_str_in_output", false},
                              {"presence_penalty", nullptr},
                              {"logit_bias", nullptr},
                              {"bad_words", json::array()}},
                             &status);
  EXPECT_EQ(status, 200) << ok.dump();
}

}  // namespace
}  // namespace fk::serve
