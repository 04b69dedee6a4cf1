// fk serve's errors over real HTTP (tiny model, CPU backend): a body that is not UTF-8 or
// not JSON is a 400, a body over the limit a 413, an unknown route a 404, each with an
// OpenAI-style error body, no exception text in a header, and counted in /metrics. A request
// the server can never hold (more sequences than it takes, a prompt plus max_tokens beyond
// the context, a sequence beyond the whole KV cache) is a 400 naming the limit, never a 503
// that clients would retry.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "serving/http/serve_test_server.h"

namespace fk::serve {
namespace {

using fixtures::TestServer;
using fixtures::TextModelDir;
using nlohmann::json;

struct Answer {
  int status = 0;
  json body;
  httplib::Headers headers;
};

Answer post_raw(const TestServer& server, const std::string& path, const std::string& body) {
  httplib::Client cli("127.0.0.1", server.port());
  auto r = cli.Post(path.c_str(), body, "application/json");
  if (!r) return {};
  return {r->status, json::parse(r->body, nullptr, false), r->headers};
}

double responses(const TestServer& server, const std::string& cls) {
  return server.metric("fk_http_responses_total{class=\"" + cls + "\"}");
}

// The OpenAI error shape: {"error": {"message", "type", "param", "code"}}.
void expect_openai_error(const Answer& a, int status, const std::string& type, const std::string& message_part) {
  EXPECT_EQ(a.status, status);
  ASSERT_TRUE(a.body.is_object() && a.body.contains("error")) << a.body;
  const json& e = a.body["error"];
  ASSERT_TRUE(e.contains("message") && e.contains("type") && e.contains("param") && e.contains("code")) << e;
  EXPECT_EQ(e["type"], type);
  EXPECT_EQ(e["code"], status);
  EXPECT_NE(e["message"].get<std::string>().find(message_part), std::string::npos) << e["message"];
  // Words for the client: no failed check's condition or source line of the server's.
  EXPECT_EQ(e["message"].get<std::string>().find(" [src/"), std::string::npos) << e["message"];
  EXPECT_NE(e["message"].get<std::string>().rfind("check failed: ", 0), 0u) << e["message"];
  for (const auto& [name, value] : a.headers) {
    EXPECT_EQ(name.find("EXCEPTION"), std::string::npos) << name << ": " << value;
    EXPECT_EQ(value.find("json.exception"), std::string::npos) << name << ": " << value;
  }
}

class ErrorResponses : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new TextModelDir("error-responses");
    ServerConfig sc = TestServer::config();
    sc.max_body_bytes = 4096;
    server_ = new TestServer(model_->engine(), sc);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete model_;
  }
  static TextModelDir* model_;
  static TestServer* server_;
};
TextModelDir* ErrorResponses::model_ = nullptr;
TestServer* ErrorResponses::server_ = nullptr;

TEST_F(ErrorResponses, InvalidUtf8IsA400OnEveryJsonRoute) {
  const std::string bad_text = "caf\xc3 \xff";
  for (const std::string& path : {"/v1/completions", "/v1/chat/completions", "/tokenize", "/detokenize"}) {
    const double client_errors = responses(*server_, "4xx"), server_errors = responses(*server_, "5xx");
    const std::string body = path == "/v1/chat/completions"
                                 ? R"({"messages": [{"role": "user", "content": ")" + bad_text + R"("}]})"
                                 : R"({"prompt": ")" + bad_text + R"(", "tokens": [1]})";
    SCOPED_TRACE(path);
    expect_openai_error(post_raw(*server_, path, body), 400, "invalid_request_error", "not valid UTF-8");
    EXPECT_EQ(responses(*server_, "4xx"), client_errors + 1);
    EXPECT_EQ(responses(*server_, "5xx"), server_errors);
  }
}

TEST_F(ErrorResponses, BodyThatIsNotJsonIsA400) {
  const double client_errors = responses(*server_, "4xx");
  expect_openai_error(post_raw(*server_, "/v1/completions", R"({"prompt": [1, 2)"), 400, "invalid_request_error",
                      "not valid JSON");
  expect_openai_error(post_raw(*server_, "/tokenize", "[1, 2]"), 400, "invalid_request_error", "must be a JSON object");
  EXPECT_EQ(responses(*server_, "4xx"), client_errors + 2);
}

TEST_F(ErrorResponses, OversizedBodyIsA413NamingTheLimit) {
  const double client_errors = responses(*server_, "4xx");
  const std::string body = R"({"prompt": ")" + std::string(8000, 'a') + R"("})";
  expect_openai_error(post_raw(*server_, "/v1/completions", body), 413, "invalid_request_error", "4096 bytes");
  EXPECT_EQ(responses(*server_, "4xx"), client_errors + 1);
}

TEST_F(ErrorResponses, UnknownRouteIsA404) {
  const double client_errors = responses(*server_, "4xx");
  expect_openai_error(post_raw(*server_, "/v1/nothing", "{}"), 404, "not_found_error", "no route for POST /v1/nothing");
  EXPECT_EQ(responses(*server_, "4xx"), client_errors + 1);
}

std::vector<int64_t> prompt_of(int64_t n) {
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(1 + i % 50);
  return ids;
}

// tiny_engine(): max_model_len 256, 64 pages of 16 tokens.
TEST(RequestLimits, MoreSequencesThanTheServerHoldsIsA400NotA503) {
  ServerConfig sc = TestServer::config();
  sc.max_pending = 4;
  TestServer server(fixtures::tiny_engine(), sc);
  int status = 0;
  const json r = server.post("/v1/completions", {{"prompt", {{1, 2}, {3, 4}}}, {"n", 3}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 400) << r;
  EXPECT_EQ(r["error"]["param"], "n");
  const std::string message = r["error"]["message"];
  EXPECT_NE(message.find("6 sequences"), std::string::npos) << message;
  EXPECT_NE(message.find("at most 4"), std::string::npos) << message;
  server.post("/v1/completions", {{"prompt", {{1, 2}, {3, 4}}}, {"n", 2}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 200);
}

TEST(RequestLimits, PromptPlusMaxTokensBeyondTheContextIsA400InVllmWords) {
  TestServer server(fixtures::tiny_engine());
  int status = 0;
  const json r = server.post("/v1/completions", {{"prompt", prompt_of(200)}, {"max_tokens", 100}}, &status);
  EXPECT_EQ(status, 400) << r;
  EXPECT_EQ(r["error"]["message"],
            "This model's maximum context length is 256 tokens. However, you requested 300 tokens (200 in the "
            "messages, 100 in the completion). Please reduce the length of the messages or completion.");
  EXPECT_EQ(r["error"]["param"], "max_tokens");
  const json full = server.post("/v1/completions", {{"prompt", prompt_of(256)}}, &status);
  EXPECT_EQ(status, 400) << full;
  EXPECT_NE(full["error"]["message"].get<std::string>().find("leaves no room"), std::string::npos) << full;
  EXPECT_EQ(full["error"]["param"], "prompt");
  // Exactly the context is fine.
  const json fits = server.post("/v1/completions",
                                {{"prompt", prompt_of(200)}, {"max_tokens", 56}, {"ignore_eos", true}}, &status);
  EXPECT_EQ(status, 200) << fits;
  EXPECT_EQ(fits["usage"]["completion_tokens"], 56);
}

TEST(RequestLimits, DefaultMaxTokensIsCutToTheContextLeft) {
  TestServer server(fixtures::tiny_engine());
  int status = 0;
  const json r = server.post("/v1/completions", {{"prompt", prompt_of(250)}, {"ignore_eos", true}}, &status);
  EXPECT_EQ(status, 200) << r;
  EXPECT_EQ(r["usage"]["completion_tokens"], 6);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
}

TEST(RequestLimits, SequenceBeyondTheWholeKvCacheIsA400NamingIt) {
  engine::EngineConfig small = fixtures::tiny_engine();
  small.num_pages = 4;  // 64 tokens of K/V, below max_model_len
  TestServer server(small);
  int status = 0;
  const json r = server.post("/v1/completions", {{"prompt", prompt_of(60)}, {"max_tokens", 10}}, &status);
  EXPECT_EQ(status, 400) << r;
  const std::string message = r["error"]["message"];
  EXPECT_NE(message.find("KV cache holds (64 tokens)"), std::string::npos) << message;
  server.post("/v1/completions", {{"prompt", prompt_of(40)}, {"max_tokens", 10}, {"ignore_eos", true}}, &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(server.metric("fk_http_responses_total{class=\"5xx\"}"), 0);
}

}  // namespace
}  // namespace fk::serve
