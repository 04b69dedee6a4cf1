// Chat requests as clients send them, over HTTP: content as a list of text parts (what the
// OpenAI SDK and `vllm bench serve` send) joined with "\n" for a template that takes a
// string, passed as a list to one that loops over parts; parts a text model cannot take and
// unknown roles refused by name; the max_tokens defaults (chat: to the context's end;
// completions: 16) and max_completion_tokens over max_tokens; GET /v1/models/{id}; and
// /tokenize of messages.
#include <gtest/gtest.h>

#include <fstream>

#include "serving/http/serve_test_server.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace fk::serve {
namespace {

using nlohmann::json;
using fixtures::TestServer;
using fixtures::TextModelDir;

const json kParts = json::array({{{"type", "text"}, {"text", "Hello"}}, {{"type", "text"}, {"text", "world"}}});

json user(const json& content) { return json::array({{{"role", "user"}, {"content", content}}}); }

class ChatServer : public ::testing::Test {
 protected:
  ChatServer() : dir_("chat-messages"), server_(dir_.engine()) {}
  TextModelDir dir_;
  TestServer server_;
};

TEST_F(ChatServer, TextPartsAreJoinedWithNewlinesForAStringTemplate) {
  int status = 0;
  const json joined = server_.post("/tokenize", {{"messages", user("Hello\nworld")}}, &status);
  ASSERT_EQ(status, 200) << joined;
  const json parts = server_.post("/tokenize", {{"messages", user(kParts)}}, &status);
  ASSERT_EQ(status, 200) << parts;
  EXPECT_EQ(parts["tokens"], joined["tokens"]);
  // Never the Python repr of the list.
  const json text = server_.post("/detokenize", {{"tokens", parts["tokens"]}}, &status);
  EXPECT_EQ(text["prompt"].get<std::string>().find("'type'"), std::string::npos) << text;
  EXPECT_NE(text["prompt"].get<std::string>().find("Hello\nworld"), std::string::npos) << text;

  // The same prompt gives the same greedy answer.
  const json base = {{"max_tokens", 6}, {"temperature", 0}, {"ignore_eos", true}};
  json a = base, b = base;
  a["messages"] = user("Hello\nworld");
  b["messages"] = user(kParts);
  const json ra = server_.post("/v1/chat/completions", a, &status);
  ASSERT_EQ(status, 200) << ra;
  const json rb = server_.post("/v1/chat/completions", b, &status);
  ASSERT_EQ(status, 200) << rb;
  EXPECT_EQ(ra["choices"][0]["message"]["content"], rb["choices"][0]["message"]["content"]);
  EXPECT_EQ(ra["usage"]["prompt_tokens"], rb["usage"]["prompt_tokens"]);
}

TEST_F(ChatServer, PartsTheModelCannotTakeAndUnknownRolesAre400) {
  for (const char* type : {"image_url", "input_audio", "video_url"}) {
    json parts = kParts;
    parts.push_back({{"type", type}, {type, {{"url", "http://example.com/x"}}}});
    int status = 0;
    const json r = server_.post("/v1/chat/completions", {{"messages", user(parts)}, {"max_tokens", 2}}, &status);
    EXPECT_EQ(status, 400) << r;
    EXPECT_NE(r["error"]["message"].get<std::string>().find(std::string("'") + type + "'"), std::string::npos) << r;
    EXPECT_EQ(r["error"]["param"], "messages");
  }
  int status = 0;
  const json r = server_.post(
      "/v1/chat/completions", {{"messages", {{{"role", "wizard"}, {"content", "hi"}}}}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 400) << r;
  EXPECT_NE(r["error"]["message"].get<std::string>().find("'wizard'"), std::string::npos) << r;
  const json missing = server_.post(
      "/v1/chat/completions", {{"messages", user(json::array({{{"type", "text"}}}))}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 400) << missing;
}

TEST_F(ChatServer, ChatWithoutMaxTokensRunsToTheContextsEnd) {
  int status = 0;
  // Random weights and no EOS token in the config: nothing ends the answer but the context.
  const json r = server_.post("/v1/chat/completions", {{"messages", user("Hi")}, {"temperature", 0}}, &status);
  ASSERT_EQ(status, 200) << r;
  const int64_t prompt = r["usage"]["prompt_tokens"], completion = r["usage"]["completion_tokens"];
  EXPECT_EQ(prompt + completion, dir_.engine().max_model_len) << r["usage"];
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  // Completions keep OpenAI's default of 16.
  const json c = server_.post("/v1/completions", {{"prompt", "Hi"}, {"temperature", 0}}, &status);
  ASSERT_EQ(status, 200) << c;
  EXPECT_EQ(c["usage"]["completion_tokens"], 16);
}

TEST_F(ChatServer, MaxCompletionTokensWinsOverMaxTokens) {
  int status = 0;
  const json r = server_.post("/v1/chat/completions",
                              {{"messages", user("Hi")}, {"max_tokens", 5}, {"max_completion_tokens", 3},
                               {"ignore_eos", true}},
                              &status);
  ASSERT_EQ(status, 200) << r;
  EXPECT_EQ(r["usage"]["completion_tokens"], 3);
  const json c = server_.post(
      "/v1/completions", {{"prompt", "Hi"}, {"max_tokens", 2}, {"max_completion_tokens", 4}, {"ignore_eos", true}},
      &status);
  ASSERT_EQ(status, 200) << c;
  EXPECT_EQ(c["usage"]["completion_tokens"], 4);
}

TEST_F(ChatServer, ModelsById) {
  int status = 0;
  const json m = server_.get("/v1/models/tiny", &status);
  ASSERT_EQ(status, 200) << m;
  EXPECT_EQ(m["id"], "tiny");
  EXPECT_EQ(m["object"], "model");
  EXPECT_TRUE(m["created"].is_number_integer());
  EXPECT_TRUE(m["owned_by"].is_string());
  EXPECT_EQ(m, server_.get("/v1/models")["data"][0]);
  const json unknown = server_.get("/v1/models/no-such-model", &status);
  EXPECT_EQ(status, 404) << unknown;
  EXPECT_NE(unknown["error"]["message"].get<std::string>().find("no-such-model"), std::string::npos) << unknown;
  EXPECT_EQ(unknown["error"]["code"], 404);
}

TEST_F(ChatServer, TokenizeMessagesRendersTheChatTemplate) {
  std::ifstream f(dir_.dir / "tokenizer_config.json");
  const auto config = nlohmann::ordered_json::parse(f);
  const auto tok = tokenizer::Tokenizer::from_file(dir_.dir / "tokenizer.json");
  const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(user("Hi there").dump());
  const std::vector<int64_t> with_prompt = tok.encode(chat::apply_chat_template(config, messages, true), false);
  const std::vector<int64_t> without = tok.encode(chat::apply_chat_template(config, messages, false), false);
  ASSERT_NE(with_prompt, without);
  int status = 0;
  const json r = server_.post("/tokenize", {{"messages", user("Hi there")}}, &status);
  ASSERT_EQ(status, 200) << r;
  EXPECT_EQ(r["tokens"].get<std::vector<int64_t>>(), with_prompt);  // add_generation_prompt defaults to true
  EXPECT_EQ(r["count"], with_prompt.size());
  EXPECT_EQ(r["max_model_len"], dir_.engine().max_model_len);
  const json no_gen = server_.post("/tokenize", {{"messages", user("Hi there")}, {"add_generation_prompt", false}},
                                   &status);
  ASSERT_EQ(status, 200) << no_gen;
  EXPECT_EQ(no_gen["tokens"].get<std::vector<int64_t>>(), without);
  const json neither = server_.post("/tokenize", {{"model", "tiny"}}, &status);
  EXPECT_EQ(status, 400) << neither;
}

// A template that loops over content parts gets them as a list, as HF passes them.
TEST(ChatParts, TemplateThatLoopsOverPartsGetsTheList) {
  TextModelDir dir("chat-parts-loop");
  const std::string tmpl =
      "{% for m in messages %}<{{ m['role'] }}>{% if m['content'] is string %}{{ m['content'] }}{% else %}"
      "{% for p in m['content'] %}[{{ p['text'] }}]{% endfor %}{% endif %}{% endfor %}";
  std::ofstream(dir.dir / "tokenizer_config.json") << json{{"chat_template", tmpl}}.dump();
  TestServer server(dir.engine());
  int status = 0;
  const json ids = server.post("/tokenize", {{"messages", user(kParts)}}, &status);
  ASSERT_EQ(status, 200) << ids;
  const json text = server.post("/detokenize", {{"tokens", ids["tokens"]}}, &status);
  EXPECT_EQ(text["prompt"], "<user>[Hello][world]");
  const json plain = server.post("/detokenize", {{"tokens", server.post("/tokenize", {{"messages", user("Hi")}})["tokens"]}});
  EXPECT_EQ(plain["prompt"], "<user>Hi");
}

TEST(ChatParts, TemplateContentFormatIsDetected) {
  auto config = [](const std::string& t) { return nlohmann::ordered_json{{"chat_template", t}}; };
  EXPECT_TRUE(chat::chat_template_takes_content_parts(
      config("{% for m in messages %}{% for c in m.content %}{{ c.text }}{% endfor %}{% endfor %}")));
  EXPECT_TRUE(chat::chat_template_takes_content_parts(config(
      "{% for m in messages %}{% if m['content'] is string %}x{% else %}{% for c in m['content'] %}y{% endfor %}"
      "{% endif %}{% endfor %}")));
  EXPECT_FALSE(chat::chat_template_takes_content_parts(
      config("{% for m in messages %}{{ m['role'] }}: {{ m['content'] | trim }}{% endfor %}")));
  EXPECT_FALSE(chat::chat_template_takes_content_parts(config("{% for m in messages %}{{ m.content }}{% endfor %}")));
}

}  // namespace
}  // namespace fk::serve
