// A soak of 3000 requests against fk serve (tiny model, CPU backend): short prompts, a few
// output tokens, streamed and not, and a third of the clients hanging up mid-request
// (streamed: after the first event; not streamed: closing the socket while the request
// decodes). Afterwards every request is accounted for on both sides, the engine holds no
// request and no KV page, and the process did not grow between a warm-up batch and the end.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>

#include "serving/http/serve_test_server.h"
#include "support/test_seed.h"

namespace fk::serve {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr int kRequests = 3000;
constexpr int kWarmup = 300;
constexpr int kClients = 40;

int64_t resident_bytes() {
  ::malloc_trim(0);  // freed heap memory back to the system: what stays is in use
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

int raw_post(int port, const json& body) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  const std::string b = body.dump();
  const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: " + std::to_string(b.size()) + "\r\n\r\n" + b;
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

struct Tally {
  std::atomic<int> completed{0}, hung_up{0};
  std::mutex mu;
  std::vector<std::string> failures;
  void fail(std::string why) {
    std::lock_guard lk(mu);
    failures.push_back(std::move(why));
  }
};

// One request of the soak, chosen by its own generator: streamed or not, hanging up or not.
void one_request(int port, uint64_t seed, int i, Tally& tally) {
  std::mt19937_64 rng(seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1)));
  std::uniform_int_distribution<int64_t> tok(1, 250), len(2, 12), out(1, 6);
  std::vector<int64_t> prompt(static_cast<size_t>(len(rng)));
  for (int64_t& t : prompt) t = tok(rng);
  const bool stream = rng() % 2 == 0, hang_up = rng() % 3 == 0;
  // Requests whose client hangs up are longer, so that they are still running then.
  const int64_t max_tokens = hang_up ? 64 : out(rng);
  json body = {{"prompt", prompt}, {"max_tokens", max_tokens}, {"ignore_eos", true}, {"stream", stream}};
  if (hang_up && !stream) {
    const int fd = raw_post(port, body);
    if (fd < 0) return tally.fail("connect/send failed");
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 10));
    ::close(fd);
    tally.hung_up++;
    return;
  }
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60, 0);
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  std::string received;
  int events = 0;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    received.append(data, n);
    return !(hang_up && ++events >= 1);
  };
  const auto res = cli.send(req);
  if (hang_up) {
    tally.hung_up++;
    return;
  }
  if (!res || res->status != 200)
    return tally.fail(res ? "HTTP " + std::to_string(res->status) + ": " + received.substr(0, 200)
                          : "client error " + httplib::to_string(res.error()));
  int64_t tokens = 0;
  if (stream) {
    if (received.find("data: [DONE]") == std::string::npos) return tally.fail("stream without [DONE]");
    size_t pos = 0;
    while ((pos = received.find("data: {", pos)) != std::string::npos) {
      const size_t end = received.find("\n\n", pos);
      tokens += static_cast<int64_t>(json::parse(received.substr(pos + 6, end - pos - 6))["choices"][0]["token_ids"].size());
      pos = end;
    }
  } else {
    tokens = json::parse(received)["usage"]["completion_tokens"].get<int64_t>();
  }
  if (tokens != max_tokens)
    return tally.fail("got " + std::to_string(tokens) + " tokens, asked for " + std::to_string(max_tokens));
  tally.completed++;
}

// Runs requests [first, last) from kClients client threads.
void run_batch(int port, uint64_t seed, int first, int last, Tally& tally) {
  std::atomic<int> next{first};
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c)
    clients.emplace_back([&] {
      for (int i; (i = next++) < last;) one_request(port, seed, i, tally);
    });
  for (auto& t : clients) t.join();
}

TEST(ServeSoak, ThousandsOfRequestsWithHangUpsLeakNothing) {
  engine::EngineConfig c = fixtures::tiny_engine("tiny-qwen3");
  c.num_pages = 128;
  c.max_num_batched_tokens = 256;
  c.max_num_seqs = 32;
  fixtures::TestServer server(c, 48);
  const uint64_t seed = fk::test::seed_for("ServeSoak.Thousands");
  const Clock::time_point t0 = Clock::now();
  Tally tally;

  run_batch(server.port(), seed, 0, kWarmup, tally);
  ASSERT_TRUE(server.wait_idle(std::chrono::seconds(30))) << server.metrics();
  const int64_t rss_warm = resident_bytes();
  run_batch(server.port(), seed, kWarmup, kRequests, tally);
  ASSERT_TRUE(server.wait_idle(std::chrono::seconds(30))) << "requests or KV pages leaked:\n" << server.metrics();
  const int64_t rss_end = resident_bytes();
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  std::printf("%d requests in %.1f s: %d completed, %d hung up, %zu failed; RSS %.1f MiB after warm-up, %.1f MiB at "
              "the end\n",
              kRequests, seconds, tally.completed.load(), tally.hung_up.load(), tally.failures.size(),
              static_cast<double>(rss_warm) / (1 << 20), static_cast<double>(rss_end) / (1 << 20));
  EXPECT_TRUE(tally.failures.empty()) << "seed " << seed << "; " << tally.failures.size()
                                      << " failed, first: " << tally.failures[0];
  EXPECT_EQ(tally.completed + tally.hung_up + static_cast<int>(tally.failures.size()), kRequests);
  EXPECT_GT(tally.hung_up, kRequests / 4);
  // The server's side: every request reached the engine and finished there; nothing failed.
  EXPECT_EQ(server.metric("fk_requests_finished_total"), kRequests);
  EXPECT_EQ(server.metric("fk_requests_running"), 0);
  EXPECT_EQ(server.metric("fk_requests_queued"), 0);
  EXPECT_EQ(server.metric("fk_kv_cache_usage_ratio"), 0);
  EXPECT_EQ(server.metrics().find("fk_http_responses_total{class=\"5xx\"} 0\n") != std::string::npos, true);
  // Bounded growth: 2700 more requests after the warm-up leave at most a few MiB behind.
  EXPECT_LT(rss_end - rss_warm, int64_t{8} << 20) << "RSS grew from " << rss_warm << " to " << rss_end << " bytes";
}

}  // namespace
}  // namespace fk::serve
