// Clients that hang up on requests that are not streamed: the server notices while the
// request is still decoding, aborts it, and its KV pages come back long before max_tokens
// would have been reached.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "models/llm/model_config.h"
#include "serving/http/serve_test_server.h"

namespace fk::serve {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Opens a connection and sends one POST; returns the socket (the answer is never read).
int send_raw_post(int port, const std::string& path, const json& body) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  const std::string b = body.dump();
  const std::string req = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                          "Content-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
  EXPECT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  return fd;
}

// A model slow enough on the CPU backend (about a millisecond per token) that a request of
// kMaxTokens takes seconds: tiny-llama's shape, wider and deeper, with a long context.
struct SlowModel {
  std::filesystem::path dir;
  SlowModel() {
    dir = std::filesystem::temp_directory_path() / ("fk-disconnect-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    json config = json::parse(model_config_json_by_name("tiny-llama"));
    config["hidden_size"] = 128;
    config["intermediate_size"] = 256;
    config["num_hidden_layers"] = 4;
    config["max_position_embeddings"] = 4096;
    config["eos_token_id"] = nullptr;
    std::ofstream(dir / "config.json") << config.dump();
  }
  ~SlowModel() { std::filesystem::remove_all(dir); }
  engine::EngineConfig engine(int64_t max_seqs = 4) const {
    engine::EngineConfig c = fixtures::tiny_engine(dir.string());
    c.dummy_weights = true;
    c.max_model_len = 4096;
    c.num_pages = 800;  // three requests of 4096 tokens fit at once
    c.max_num_seqs = max_seqs;
    return c;
  }
};

constexpr int64_t kMaxTokens = 4000;

// Sends the request, hangs up once it is decoding, and checks that it is aborted: every KV
// page free again, and far fewer than n * kMaxTokens tokens generated.
void hang_up_mid_request(const fixtures::TestServer& server, const json& body, int64_t n) {
  const int fd = send_raw_post(server.port(), "/v1/completions", body);
  const Clock::time_point sent = Clock::now();
  while (server.metric("fk_generation_tokens_total") < 8 * static_cast<double>(n)) {
    ASSERT_LT(Clock::now() - sent, std::chrono::seconds(30)) << "the request never started decoding";
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double before = server.metric("fk_generation_tokens_total");
  const double seconds_decoding = std::chrono::duration<double>(Clock::now() - sent).count();
  ::close(fd);
  const Clock::time_point closed = Clock::now();
  ASSERT_TRUE(server.wait_idle(std::chrono::seconds(10))) << "the abandoned request still holds the engine:\n"
                                                          << server.metrics();
  const double freed_after = std::chrono::duration<double>(Clock::now() - closed).count();
  const double generated = server.metric("fk_generation_tokens_total");
  std::printf("%.0f tokens in %.3f s before the hang-up, %.0f when freed %.3f s after it\n", before, seconds_decoding,
              generated, freed_after);
  EXPECT_LT(generated, static_cast<double>(n * kMaxTokens) / 2) << "the request ran on instead of being aborted";
  // At the rate it decoded, the rest of the request would have taken much longer.
  const double rate = before / seconds_decoding;
  EXPECT_LT(freed_after, (static_cast<double>(n * kMaxTokens) - before) / rate / 2);
}

TEST(ClientDisconnect, NonStreamedCompletionIsAbortedWhileDecoding) {
  const SlowModel model;
  fixtures::TestServer server(model.engine(), 4);
  hang_up_mid_request(server, {{"prompt", {1, 2, 3}}, {"max_tokens", kMaxTokens}, {"ignore_eos", true}}, 1);
  // The server still answers.
  int status = 0;
  server.post("/v1/completions", {{"prompt", {1, 2}}, {"max_tokens", 2}}, &status);
  EXPECT_EQ(status, 200);
}

TEST(ClientDisconnect, EveryChoiceOfANonStreamedRequestIsAborted) {
  const SlowModel model;
  fixtures::TestServer server(model.engine(), 4);
  hang_up_mid_request(server, {{"prompt", {4, 5, 6}}, {"n", 3}, {"max_tokens", kMaxTokens}, {"ignore_eos", true}}, 3);
}

TEST(ClientDisconnect, StreamedRequestWaitingForItsFirstTokenIsAborted) {
  // One sequence at a time: the streamed request waits behind the first, sending nothing.
  const SlowModel model;
  fixtures::TestServer server(model.engine(/*max_seqs=*/1), 4);
  const int first = send_raw_post(server.port(), "/v1/completions",
                                  {{"prompt", {1, 2, 3}}, {"max_tokens", kMaxTokens}, {"ignore_eos", true}});
  const int second = send_raw_post(server.port(), "/v1/completions",
                                   {{"prompt", {7, 8, 9}}, {"max_tokens", kMaxTokens}, {"ignore_eos", true},
                                    {"stream", true}});
  const Clock::time_point sent = Clock::now();
  while (server.metric("fk_requests_running") < 2) {
    ASSERT_LT(Clock::now() - sent, std::chrono::seconds(30)) << server.metrics();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::close(second);
  // The queued request leaves while the first still decodes.
  while (server.metric("fk_requests_running") != 1) {
    ASSERT_LT(Clock::now() - sent, std::chrono::seconds(30)) << server.metrics();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_LT(server.metric("fk_generation_tokens_total"), kMaxTokens / 2) << "only after the first one finished";
  ::close(first);
  ASSERT_TRUE(server.wait_idle(std::chrono::seconds(10))) << server.metrics();
  EXPECT_LT(server.metric("fk_generation_tokens_total"), kMaxTokens / 2);
}

}  // namespace
}  // namespace fk::serve
