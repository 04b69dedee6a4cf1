// fk serve with a tokenizer: text prompts, text in answers (whole and streamed), stop
// strings, /tokenize and /detokenize. The model is tiny-llama's config sized to the test
// tokenizer's vocabulary, with random weights.
#include <httplib.h>
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "text/chat_template.h"
#include "models/llm/model_config.h"
#include "text/tokenizer.h"
#include "serving/http/http_server.h"

namespace fk::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kTokenizer = std::string(FK_SOURCE_DIR) + "/tests/data/tokenizers/bytelevel_llama3.json";

class TextServer : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fk-text-api-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    const auto tok = tokenizer::Tokenizer::from_file(kTokenizer);
    json config = json::parse(model_config_json_by_name("tiny-llama"));
    config["vocab_size"] = tok.vocab_size();
    config["eos_token_id"] = nullptr;
    std::ofstream(dir_ / "config.json") << config.dump();
    fs::copy_file(kTokenizer, dir_ / "tokenizer.json", fs::copy_options::overwrite_existing);
    std::ifstream tmpl(std::string(FK_SOURCE_DIR) + "/tests/data/chat_templates/llama3.jinja");
    const std::string chat_template((std::istreambuf_iterator<char>(tmpl)), std::istreambuf_iterator<char>());
    std::ofstream(dir_ / "tokenizer_config.json")
        << json{{"chat_template", chat_template}, {"bos_token", "<|begin_of_text|>"}, {"eos_token", "<|eot_id|>"}}.dump();
    engine::EngineConfig ec;
    ec.model = dir_.string();
    ec.dummy_weights = true;
    ec.backend = DeviceType::cpu;
    ec.num_pages = 64;
    ec.max_num_batched_tokens = 128;
    ec.max_num_seqs = 8;
    ec.max_model_len = 256;
    ServerConfig sc;
    sc.port = 0;
    sc.served_model_name = "tiny";
    sc.threads = 8;
    server_ = std::make_unique<HttpServer>(sc, std::make_unique<engine::Engine>(ec));
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
    fs::remove_all(dir_);
  }
  json post(const std::string& path, const json& body, int* status = nullptr) {
    httplib::Client cli("127.0.0.1", port_);
    auto r = cli.Post(path.c_str(), body.dump(), "application/json");
    EXPECT_TRUE(r);
    if (!r) return {};
    if (status) *status = r->status;
    return json::parse(r->body);
  }
  fs::path dir_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

const json kGreedy = {{"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}};

TEST_F(TextServer, TextPromptAndAnswerMatchTheTokenizer) {
  const auto tok = tokenizer::Tokenizer::from_file(kTokenizer);
  json body = kGreedy;
  body["prompt"] = "Hello wörld, 你好 👋";
  const json r = post("/v1/completions", body);
  const auto ids = r["choices"][0]["token_ids"].get<std::vector<int64_t>>();
  ASSERT_EQ(ids.size(), 24u) << r.dump();
  EXPECT_EQ(r["choices"][0]["text"], tok.decode(ids, /*skip_special_tokens=*/true));
  EXPECT_EQ(r["usage"]["prompt_tokens"], static_cast<int64_t>(tok.encode("Hello wörld, 你好 👋").size()));
  // The same prompt as token ids gives the same answer.
  body["prompt"] = tok.encode("Hello wörld, 你好 👋");
  EXPECT_EQ(post("/v1/completions", body)["choices"][0]["token_ids"], r["choices"][0]["token_ids"]);
}

TEST_F(TextServer, StreamedTextJoinsToTheWholeText) {
  json body = kGreedy;
  body["prompt"] = "The quick brown fox";
  const std::string whole = post("/v1/completions", body)["choices"][0]["text"];
  body["stream"] = true;
  httplib::Client cli("127.0.0.1", port_);
  auto r = cli.Post("/v1/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  std::string joined;
  size_t pos = 0;
  while ((pos = r->body.find("data: {", pos)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", pos);
    joined += json::parse(r->body.substr(pos + 6, end - pos - 6))["choices"][0]["text"].get<std::string>();
    pos = end;
  }
  EXPECT_EQ(joined, whole);
}

TEST_F(TextServer, StopStringsEndTheTextBeforeThem) {
  json body = kGreedy;
  body["prompt"] = "Once upon a time";
  const json free_run = post("/v1/completions", body);
  const std::string text = free_run["choices"][0]["text"];
  ASSERT_GE(text.size(), 8u);
  // A stop string from the second half of the free-running answer: two ASCII letters (random
  // weights also produce bytes that decode to U+FFFD, which make poor stop strings).
  std::string stop;
  for (size_t i = text.size() / 2; i + 1 < text.size() && stop.empty(); ++i)
    if (std::isalpha(static_cast<unsigned char>(text[i])) && std::isalpha(static_cast<unsigned char>(text[i + 1])))
      stop = text.substr(i, 2);
  if (stop.empty()) GTEST_SKIP() << "no two ASCII letters in the second half of: " << text;
  body["stop"] = {stop};
  for (bool stream : {false, true}) {
    body["stream"] = stream;
    std::string got, finish;
    if (!stream) {
      const json r = post("/v1/completions", body);
      got = r["choices"][0]["text"];
      finish = r["choices"][0]["finish_reason"];
    } else {
      httplib::Client cli("127.0.0.1", port_);
      auto r = cli.Post("/v1/completions", body.dump(), "application/json");
      ASSERT_TRUE(r);
      size_t pos = 0;
      while ((pos = r->body.find("data: {", pos)) != std::string::npos) {
        const size_t end = r->body.find("\n\n", pos);
        const json c = json::parse(r->body.substr(pos + 6, end - pos - 6))["choices"][0];
        got += c["text"].get<std::string>();
        if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
        pos = end;
      }
    }
    EXPECT_EQ(got, text.substr(0, text.find(stop))) << "stream " << stream << ", stop '" << stop << "'";
    EXPECT_EQ(finish, "stop") << "stream " << stream;
  }
}

TEST_F(TextServer, ChatCompletionIsTheTemplatedPromptsCompletion) {
  const json messages = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                     {{"role", "user"}, {"content", "Wie spät ist es? 🕐"}}});
  json body = kGreedy;
  body["messages"] = messages;
  int status = 0;
  const json chat = post("/v1/chat/completions", body, &status);
  ASSERT_EQ(status, 200) << chat.dump();
  EXPECT_EQ(chat["object"], "chat.completion");
  EXPECT_EQ(chat["choices"][0]["message"]["role"], "assistant");
  // The same conversation rendered here and sent as token ids to /v1/completions.
  json config;
  std::ifstream(dir_ / "tokenizer_config.json") >> config;
  const std::string prompt = chat::apply_chat_template(config, messages, true);
  const auto tok = tokenizer::Tokenizer::from_file(kTokenizer);
  json completion = kGreedy;
  completion["prompt"] = tok.encode(prompt, /*add_special_tokens=*/false);
  const json plain = post("/v1/completions", completion);
  EXPECT_EQ(chat["choices"][0]["message"]["content"], plain["choices"][0]["text"]);
  EXPECT_EQ(chat["usage"]["prompt_tokens"], plain["usage"]["prompt_tokens"]);

  // Streamed: the first delta carries the role, the deltas join to the same content.
  body["stream"] = true;
  httplib::Client cli("127.0.0.1", port_);
  auto r = cli.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  std::string joined, finish;
  bool first = true;
  size_t pos = 0;
  while ((pos = r->body.find("data: {", pos)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", pos);
    const json c = json::parse(r->body.substr(pos + 6, end - pos - 6))["choices"][0];
    if (first) EXPECT_EQ(c["delta"]["role"], "assistant");
    first = false;
    joined += c["delta"]["content"].get<std::string>();
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
    pos = end;
  }
  EXPECT_EQ(joined, plain["choices"][0]["text"].get<std::string>());
  EXPECT_EQ(finish, "length");
}

TEST_F(TextServer, BadChatRequestsGetOpenAiErrors) {
  int status = 0;
  for (const json& body : {json{{"messages", "hi"}}, json{{"messages", json::array()}},
                           json{{"messages", {{{"content", "no role"}}}}}}) {
    const json r = post("/v1/chat/completions", body, &status);
    EXPECT_EQ(status, 400) << body.dump();
    EXPECT_EQ(r["error"]["param"], "messages") << r.dump();
  }
}

TEST_F(TextServer, TokenizeAndDetokenizeRoundTrip) {
  const json t = post("/tokenize", {{"prompt", "fast kernels ⚡"}});
  ASSERT_TRUE(t.contains("tokens")) << t.dump();
  EXPECT_EQ(t["count"], t["tokens"].size());
  EXPECT_EQ(post("/detokenize", {{"tokens", t["tokens"]}})["prompt"].get<std::string>().find("fast kernels ⚡") !=
                std::string::npos,
            true);
  int status = 0;
  post("/tokenize", {{"prompt", 5}}, &status);
  EXPECT_EQ(status, 400);
}

}  // namespace
}  // namespace fk::serve
