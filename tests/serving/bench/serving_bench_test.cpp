// The serving benchmark against fk serve (tiny model, CPU backend), and a soak of many
// requests of which some clients hang up: nothing leaks, everything else completes.
#include <httplib.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <random>
#include <semaphore>
#include <thread>

#include "serving/http/http_server.h"
#include "serving/bench/serving_bench.h"
#include "support/test_seed.h"

namespace fk::serve {
namespace {

using nlohmann::json;

struct RunningServer {
  explicit RunningServer(int64_t max_seqs) {
    engine::EngineConfig c;
    c.model = "tiny-qwen3";
    c.backend = DeviceType::cpu;
    c.num_pages = 96;
    c.max_num_batched_tokens = 256;
    c.max_num_seqs = max_seqs;
    c.max_model_len = 256;
    ServerConfig sc;
    sc.port = 0;
    sc.threads = 48;
    server = std::make_unique<HttpServer>(sc, std::make_unique<engine::Engine>(c));
    port = server->bind();
    thread = std::thread([this] { server->serve(); });
  }
  ~RunningServer() {
    server->stop();
    thread.join();
  }
  std::string metrics() {
    httplib::Client cli("127.0.0.1", port);
    auto r = cli.Get("/metrics");
    return r ? r->body : "";
  }
  std::unique_ptr<HttpServer> server;
  std::thread thread;
  int port = 0;
};

TEST(ServingBench, MeasuresEveryRequestAgainstFkServe) {
  RunningServer s(8);
  ServingBenchConfig c;
  c.port = s.port;
  c.max_concurrency = 4;
  c.request_rate = 200;  // Poisson arrivals
  c.seed = test::seed_for("ServingBench.Measures");
  const auto reqs = random_requests(24, 4, 40, 2, 12, 256, c.seed);
  double duration = 0;
  const auto outcomes = run_serving_bench(c, reqs, &duration);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_TRUE(outcomes[i].ok) << i << ": " << outcomes[i].error;
    EXPECT_EQ(outcomes[i].output_tokens, reqs[i].output_len);
    EXPECT_LE(outcomes[i].ttft_s, outcomes[i].e2e_s);
    // One gap per token event after the first; a lagging reader gets several tokens per event.
    EXPECT_LE(static_cast<int64_t>(outcomes[i].itl_s.size()), reqs[i].output_len - 1);
  }
  const json j = summarize(outcomes, duration);
  EXPECT_EQ(j["completed"], 24);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_GT(j["output_throughput"].get<double>(), 0);
  EXPECT_LE(j["median_ttft_ms"].get<double>(), j["p99_ttft_ms"].get<double>());
  EXPECT_LE(j["median_ttft_ms"].get<double>(), j["median_e2el_ms"].get<double>());
}

TEST(ServingBench, FailedRequestsAreCountedNotHidden) {
  RunningServer s(4);
  ServingBenchConfig c;
  c.port = s.port;
  c.model = "not-the-served-model";  // every request gets a 404
  double duration = 0;
  const auto outcomes = run_serving_bench(c, random_requests(3, 2, 4, 2, 3, 256, 1), &duration);
  for (const auto& o : outcomes) {
    EXPECT_FALSE(o.ok);
    EXPECT_NE(o.error.find("404"), std::string::npos) << o.error;
  }
  EXPECT_EQ(summarize(outcomes, 1.0)["failed"], 3);
}

TEST(ServeSoak, HundredsOfRequestsWithHangUpsLeakNothing) {
  RunningServer s(16);
  const uint64_t seed = test::seed_for("ServeSoak");
  const auto reqs = random_requests(300, 2, 60, 1, 40, 256, seed);
  std::vector<std::thread> clients;
  std::atomic<int> completed{0}, hung_up{0};
  std::mutex failure_mu;
  std::vector<std::string> failures;
  std::counting_semaphore<> slots(32);
  for (size_t i = 0; i < reqs.size(); ++i) {
    slots.acquire();
    clients.emplace_back([&, i] {
      std::mt19937_64 rng(seed + i);
      const bool hang_up = rng() % 3 == 0;
      httplib::Client cli("127.0.0.1", s.port);
      cli.set_decompress(false);
      httplib::Request req;
      req.method = "POST";
      req.path = "/v1/completions";
      req.body = json{{"prompt", reqs[i].prompt}, {"max_tokens", reqs[i].output_len}, {"ignore_eos", true},
                      {"stream", true}}
                     .dump();
      req.set_header("Content-Type", "application/json");
      int events = 0;
      req.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return !(hang_up && ++events >= 2); };
      const auto res = cli.send(req);
      if (hang_up) {
        hung_up++;
      } else if (res && res->status == 200) {
        completed++;
      } else {
        std::lock_guard lk(failure_mu);
        failures.push_back(res ? "HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 200)
                               : "client error " + httplib::to_string(res.error()) + " (prompt " +
                                     std::to_string(reqs[i].prompt.size()) + ", max_tokens " +
                                     std::to_string(reqs[i].output_len) + ", events " + std::to_string(events) + ")");
      }
      slots.release();
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(completed + hung_up, 300) << "seed " << seed << "; first failure: " << (failures.empty() ? "" : failures[0]);
  // Every request is gone from the engine and every KV page is free again.
  for (int i = 0; i < 300; ++i) {
    const std::string m = s.metrics();
    if (m.find("fk_requests_running 0\n") != std::string::npos && m.find("fk_kv_cache_usage_ratio 0\n") != std::string::npos)
      return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "requests or KV pages leaked:\n" << s.metrics();
}

}  // namespace
}  // namespace fk::serve
