// fk serve on the CPU backend (tiny model), driven by a real HTTP client: completions
// (plain and streamed) equal the engine's own generation, OpenAI-style errors for bad
// requests, a client that disconnects mid-stream frees its request, and the metrics.
#include <httplib.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "fk/op_registry.h"
#include "fk/status.h"
#include "serving/http/http_server.h"

namespace fk::serve {
namespace {

using nlohmann::json;

engine::EngineConfig tiny() {
  engine::EngineConfig c;
  c.model = "tiny-llama";
  c.backend = DeviceType::cpu;
  c.num_pages = 64;
  c.max_num_batched_tokens = 128;
  c.max_num_seqs = 16;
  c.max_model_len = 256;
  return c;
}

class Server : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerConfig sc;
    sc.port = 0;
    sc.served_model_name = "tiny";
    sc.threads = 8;
    server_ = std::make_unique<HttpServer>(sc, std::make_unique<engine::Engine>(tiny()));
    port_ = server_->bind();
    thread_ = std::thread([this] { server_->serve(); });
  }
  void TearDown() override {
    server_->stop();
    thread_.join();
  }
  httplib::Client client() { return httplib::Client("127.0.0.1", port_); }
  json post(const std::string& path, const std::string& body, int* status = nullptr) {
    auto cli = client();
    auto r = cli.Post(path.c_str(), body, "application/json");
    EXPECT_TRUE(r) << path;
    if (!r) return {};
    if (status) *status = r->status;
    return json::parse(r->body);
  }
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

std::vector<int64_t> engine_tokens(const std::vector<int64_t>& prompt, int64_t max_tokens) {
  engine::Engine e(tiny());
  engine::SamplingParams sp;
  sp.temperature = 0;
  sp.max_tokens = max_tokens;
  sp.ignore_eos = true;
  return e.generate({prompt}, sp)[0].output_tokens;
}

TEST_F(Server, CompletionEqualsTheEnginesGeneration) {
  const std::vector<int64_t> prompt = {5, 6, 7, 8, 9};
  int status = 0;
  const json r = post("/v1/completions",
                      json{{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", 6}, {"temperature", 0},
                           {"ignore_eos", true}}.dump(),
                      &status);
  ASSERT_EQ(status, 200) << r.dump();
  EXPECT_EQ(r["object"], "text_completion");
  ASSERT_EQ(r["choices"].size(), 1u);
  EXPECT_EQ(r["choices"][0]["token_ids"].get<std::vector<int64_t>>(), engine_tokens(prompt, 6));
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(r["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(r["usage"]["completion_tokens"], 6);
}

TEST_F(Server, StreamedTokensEqualTheWholeAnswer) {
  const std::vector<int64_t> prompt = {11, 12, 13};
  auto cli = client();
  std::string body;
  auto r = cli.Post("/v1/completions",
                    json{{"prompt", prompt}, {"max_tokens", 5}, {"temperature", 0}, {"ignore_eos", true},
                         {"stream", true}, {"stream_options", {{"include_usage", true}}}}
                        .dump(),
                    "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  std::vector<int64_t> streamed;
  std::string finish;
  bool done = false, usage = false;
  size_t pos = 0;
  while ((pos = r->body.find("data: ", pos)) != std::string::npos) {
    const size_t end = r->body.find("\n\n", pos);
    const std::string payload = r->body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (payload == "[DONE]") {
      done = true;
      continue;
    }
    const json chunk = json::parse(payload);
    if (chunk.contains("usage")) {
      usage = true;
      continue;
    }
    for (int64_t t : chunk["choices"][0]["token_ids"]) streamed.push_back(t);
    if (!chunk["choices"][0]["finish_reason"].is_null()) finish = chunk["choices"][0]["finish_reason"];
  }
  EXPECT_TRUE(done);
  EXPECT_TRUE(usage);
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(streamed, engine_tokens(prompt, 5));
}

TEST_F(Server, BatchAndNSamplesGiveEveryChoice) {
  const json r = post("/v1/completions", json{{"prompt", {{1, 2, 3}, {4, 5}}}, {"n", 2}, {"max_tokens", 3},
                                              {"seed", 7}, {"ignore_eos", true}}.dump());
  ASSERT_EQ(r["choices"].size(), 4u) << r.dump();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(r["choices"][i]["index"], i);
    EXPECT_EQ(r["choices"][i]["token_ids"].size(), 3u);
  }
}

TEST_F(Server, BadRequestsGetOpenAiErrors) {
  struct Case {
    std::string body;
    int status;
    std::string param;
  };
  const std::vector<Case> cases = {
      {"{not json", 400, ""},
      {"[1, 2]", 400, ""},
      {R"({"prompt": [1, 2], "max_tokens": "ten"})", 400, "max_tokens"},
      {R"({"prompt": [1, 2], "temperature": -1})", 400, "temperature"},
      {R"({"prompt": "hello"})", 400, "prompt"},
      {R"({"prompt": []})", 400, "prompt"},
      {R"({"prompt": [1, 100000]})", 400, "prompt"},
      {R"({"prompt": [1, 2], "model": "other"})", 404, "model"},
      {R"({"max_tokens": 3})", 400, "prompt"},
      {json{{"prompt", std::vector<int64_t>(300, 1)}}.dump(), 400, "prompt"},
      {R"({"prompt": [1], "logprobs": 21})", 400, "logprobs"},
      {R"({"prompt": [1], "logprobs": true})", 400, "logprobs"},
  };
  for (const Case& c : cases) {
    int status = 0;
    const json r = post("/v1/completions", c.body, &status);
    EXPECT_EQ(status, c.status) << c.body << " -> " << r.dump();
    ASSERT_TRUE(r.contains("error")) << c.body;
    EXPECT_FALSE(r["error"]["message"].get<std::string>().empty());
    if (!c.param.empty()) EXPECT_EQ(r["error"]["param"], c.param) << c.body;
  }
  int status = 0;
  const json chat = post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})", &status);
  EXPECT_EQ(status, 400) << "a model without a chat template";
  EXPECT_NE(chat["error"]["message"].get<std::string>().find("chat_template"), std::string::npos);
  // The server still works after all that.
  const json ok = post("/v1/completions", R"({"prompt": [1, 2], "max_tokens": 2})", &status);
  EXPECT_EQ(status, 200) << ok.dump();
}

TEST_F(Server, ModelsHealthAndMetrics) {
  auto cli = client();
  auto h = cli.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto m = cli.Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(json::parse(m->body)["data"][0]["id"], "tiny");
  post("/v1/completions", R"({"prompt": [1, 2, 3], "max_tokens": 4, "ignore_eos": true})");
  auto met = cli.Get("/metrics");
  ASSERT_TRUE(met);
  for (const char* name : {"fk_requests_running 0", "fk_generation_tokens_total 4", "fk_prompt_tokens_total 3",
                           "fk_time_to_first_token_seconds_count 1", "fk_kv_cache_usage_ratio",
                           // The step profile: one prefill of the 3 prompt tokens, then 3 decode steps.
                           "fk_engine_steps_total{kind=\"prefill\"} 1", "fk_engine_steps_total{kind=\"decode\"} 3",
                           "fk_engine_prefill_tokens_total 3", "fk_engine_decode_tokens_total 3",
                           "fk_engine_loop_seconds_total{phase=\"run\"}", "fk_engine_loop_seconds_total{phase=\"loop\"}"})
    EXPECT_NE(met->body.find(name), std::string::npos) << name << "\n" << met->body;
  auto missing = cli.Get("/nope");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_TRUE(json::parse(missing->body).contains("error"));
}

TEST_F(Server, ClientThatDisconnectsMidStreamFreesItsRequest) {
  {
    auto cli = client();
    int chunks = 0;
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = json{{"prompt", {1, 2, 3}}, {"max_tokens", 250}, {"ignore_eos", true}, {"stream", true}}.dump();
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++chunks < 3; };  // hang up
    cli.send(req);
    EXPECT_GE(chunks, 3);
  }
  // The request is aborted and its KV pages come back.
  auto cli = client();
  for (int i = 0; i < 200; ++i) {
    auto met = cli.Get("/metrics");
    ASSERT_TRUE(met);
    if (met->body.find("fk_requests_running 0\n") != std::string::npos &&
        met->body.find("fk_kv_cache_usage_ratio 0\n") != std::string::npos) {
      // Stopped early, not run to its 250 tokens.
      const size_t at = met->body.find("\nfk_generation_tokens_total ") + 1;
      const long generated = std::stol(met->body.substr(at + 27));
      EXPECT_LT(generated, 250) << "the request ran to completion instead of being aborted";
      std::printf("generated before the abort took effect: %ld\n", generated);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "the disconnected client's request still holds the engine";
}

}  // namespace
}  // namespace fk::serve

namespace fk::serve {
namespace {

fk_status failing_op(const void*, void*) {
  set_last_error_message("injected device fault");
  return FK_ERR_INTERNAL;
}

// An engine that fails mid-step (an op reports an error, as a device fault would): the
// request in flight gets a server error, later ones a 503 at once, and /health says so.
TEST(ServerEngineFailure, FailsRequestsFastAndReportsUnhealthy) {
  ServerConfig sc;
  sc.port = 0;
  sc.threads = 4;
  HttpServer server(sc, std::make_unique<engine::Engine>(tiny()));
  const int port = server.bind();
  std::thread t([&] { server.serve(); });
  OpRegistry::global().install("silu_and_mul", DeviceType::cpu, failing_op, "test: failing");
  httplib::Client cli("127.0.0.1", port);
  auto first = cli.Post("/v1/completions", R"({"prompt": [1, 2, 3], "max_tokens": 4})", "application/json");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 500);
  EXPECT_NE(first->body.find("injected device fault"), std::string::npos) << first->body;
  auto later = cli.Post("/v1/completions", R"({"prompt": [1, 2, 3], "max_tokens": 4})", "application/json");
  ASSERT_TRUE(later);
  EXPECT_EQ(later->status, 503);
  auto health = cli.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  OpRegistry::global().reset("silu_and_mul", DeviceType::cpu);
  server.stop();
  t.join();
}

}  // namespace
}  // namespace fk::serve
