// /metrics over HTTP: fk's own metrics and vLLM's names beside them (vllm:..., labelled
// with model_name), with their # TYPE lines, counting the requests the test sends.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <regex>
#include <sstream>

#include "serving/http/serve_test_server.h"

namespace fk::serve {
namespace {

using nlohmann::json;
using fixtures::TestServer;

// Every sample of the scrape: "name{labels}" -> value; and every # TYPE line: name -> type.
struct Scrape {
  std::map<std::string, double> samples;
  std::map<std::string, std::string> types;
  double at(const std::string& key) const {
    const auto it = samples.find(key);
    return it == samples.end() ? -1 : it->second;
  }
};

Scrape scrape(const std::string& text) {
  Scrape s;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream t(line.substr(7));
      std::string name, type;
      t >> name >> type;
      s.types[name] = type;
    } else if (!line.empty() && line[0] != '#') {
      const size_t space = line.rfind(' ');
      s.samples[line.substr(0, space)] = std::stod(line.substr(space + 1));
    }
  }
  return s;
}

TEST(Metrics, VllmNamesBesideFksOwn) {
  TestServer server(fixtures::tiny_engine(), 16, "tiny");
  const Scrape before = scrape(server.metrics());
  const std::string m = "model_name=\"tiny\"";
  EXPECT_EQ(before.at("vllm:request_success_total{" + m + ",finished_reason=\"length\"}"), 0);

  int status = 0;
  for (int i = 0; i < 3; ++i) {
    server.post("/v1/completions", {{"prompt", {1, 2, 3, 4}}, {"max_tokens", 5}, {"ignore_eos", true}}, &status);
    ASSERT_EQ(status, 200);
  }
  ASSERT_TRUE(server.wait_idle(std::chrono::seconds(10)));
  const Scrape after = scrape(server.metrics());

  const std::map<std::string, std::string> want = {
      {"vllm:num_requests_running", "gauge"},
      {"vllm:num_requests_waiting", "gauge"},
      {"vllm:kv_cache_usage_perc", "gauge"},
      {"vllm:prompt_tokens_total", "counter"},
      {"vllm:generation_tokens_total", "counter"},
      {"vllm:request_success_total", "counter"},
      {"vllm:time_to_first_token_seconds", "histogram"},
      {"vllm:time_per_output_token_seconds", "histogram"},
      {"vllm:e2e_request_latency_seconds", "histogram"},
      {"fk_requests_aborted_total", "counter"},
      {"fk_requests_finished_total", "counter"},
  };
  for (const auto& [name, type] : want) {
    const auto it = after.types.find(name);
    ASSERT_NE(it, after.types.end()) << name << " has no # TYPE line";
    EXPECT_EQ(it->second, type) << name;
  }
  EXPECT_EQ(after.at("vllm:num_requests_running{" + m + "}"), 0);
  EXPECT_EQ(after.at("vllm:num_requests_waiting{" + m + "}"), 0);
  const double kv = after.at("vllm:kv_cache_usage_perc{" + m + "}");
  EXPECT_GE(kv, 0);
  EXPECT_LE(kv, 1);
  EXPECT_EQ(after.at("vllm:prompt_tokens_total{" + m + "}") - before.at("vllm:prompt_tokens_total{" + m + "}"), 12);
  EXPECT_EQ(after.at("vllm:generation_tokens_total{" + m + "}") - before.at("vllm:generation_tokens_total{" + m + "}"),
            15);
  EXPECT_EQ(after.at("vllm:request_success_total{" + m + ",finished_reason=\"length\"}"), 3);
  EXPECT_EQ(after.at("vllm:request_success_total{" + m + ",finished_reason=\"abort\"}"), 0);
  // The histograms counted each request (time per output token: once per gap between two
  // of its tokens, as vLLM counts), and their +Inf buckets hold every observation.
  EXPECT_EQ(after.at("vllm:time_to_first_token_seconds_count{" + m + "}"), 3);
  EXPECT_EQ(after.at("vllm:e2e_request_latency_seconds_count{" + m + "}"), 3);
  EXPECT_EQ(after.at("vllm:time_per_output_token_seconds_count{" + m + "}"), 12);
  EXPECT_EQ(after.at("vllm:e2e_request_latency_seconds_bucket{" + m + ",le=\"+Inf\"}"), 3);
  EXPECT_GT(after.at("vllm:e2e_request_latency_seconds_sum{" + m + "}"), 0);
  // vLLM's buckets, not fk's: its end-to-end histogram starts at 0.3 s.
  EXPECT_GE(after.at("vllm:e2e_request_latency_seconds_bucket{" + m + ",le=\"0.3\"}"), 0);
  EXPECT_EQ(after.at("vllm:e2e_request_latency_seconds_bucket{" + m + ",le=\"0.01\"}"), -1);
  // fk's own names are still there.
  EXPECT_EQ(after.at("fk_requests_finished_total") - before.at("fk_requests_finished_total"), 3);
  EXPECT_EQ(after.at("fk_time_to_first_token_seconds_count"), 3);
}

TEST(Metrics, FinishReasonsAreCounted) {
  TestServer server(fixtures::tiny_engine(), 16, "tiny");
  const std::string m = "model_name=\"tiny\"";
  // stop: the greedy first token, named as a stop token, ends the same request at once.
  int status = 0;
  const json first = server.post(
      "/v1/completions", {{"prompt", {5, 6, 7}}, {"max_tokens", 1}, {"temperature", 0}, {"ignore_eos", true}}, &status);
  ASSERT_EQ(status, 200) << first;
  const int64_t t = first["choices"][0]["token_ids"][0];
  const json stopped = server.post("/v1/completions", {{"prompt", {5, 6, 7}}, {"max_tokens", 8}, {"temperature", 0},
                                                       {"stop_token_ids", {t}}}, &status);
  ASSERT_EQ(status, 200) << stopped;
  EXPECT_EQ(stopped["choices"][0]["finish_reason"], "stop");
  // abort: a streamed request whose client hangs up after the first event.
  {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(server.port()));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    const std::string body =
        json{{"prompt", {1, 2, 3}}, {"max_tokens", 250}, {"ignore_eos", true}, {"stream", true}}.dump();
    const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
    std::string got;
    char buf[512];
    while (got.find("data: {") == std::string::npos) {
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      ASSERT_GT(n, 0);
      got.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
  }
  ASSERT_TRUE(server.wait_idle(std::chrono::seconds(10)));
  const Scrape s = scrape(server.metrics());
  EXPECT_EQ(s.at("vllm:request_success_total{" + m + ",finished_reason=\"length\"}"), 1);
  EXPECT_EQ(s.at("vllm:request_success_total{" + m + ",finished_reason=\"stop\"}"), 1);
  EXPECT_EQ(s.at("vllm:request_success_total{" + m + ",finished_reason=\"abort\"}"), 1);
  EXPECT_EQ(s.at("fk_requests_aborted_total"), 1);
}

}  // namespace
}  // namespace fk::serve
