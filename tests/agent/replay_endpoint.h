// A local OpenAI-compatible chat endpoint for tests: answers POST /v1/chat/completions
// from a script (recorded answers, HTTP errors, malformed bodies, slow answers) and keeps
// every request it got, so tests can assert what the agent sent.
#pragma once
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace fk::agent::test {

struct Scripted {
  int status = 200;
  std::string body;
  double delay_s = 0;                                       // before answering
  std::vector<std::pair<std::string, std::string>> headers;  // e.g. Retry-After

  // A chat completion whose message content is `content`.
  static Scripted answer(const std::string& content, int64_t prompt_tokens = 100, int64_t completion_tokens = 50) {
    const nlohmann::json j = {
        {"id", "chatcmpl-replay"},
        {"object", "chat.completion"},
        {"model", "replay"},
        {"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}}, {"finish_reason", "stop"}}}},
        {"usage",
         {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}}}};
    return {200, j.dump(), 0, {}};
  }
  static Scripted code(const std::string& source, const std::string& lang = "cpp") {
    return answer("Here is the kernel.\n\n```" + lang + "\n" + source + "```\nIt should be fast.");
  }
  static Scripted error(int status, const std::string& message) {
    return {status, nlohmann::json{{"error", {{"message", message}, {"type", "replay"}}}}.dump(), 0, {}};
  }
  static Scripted malformed() { return {200, "{\"choices\": [ this is not JSON", 0, {}}; }
  Scripted after(double seconds) const {
    Scripted s = *this;
    s.delay_s = seconds;
    return s;
  }
};

struct Received {
  nlohmann::json body;
  std::string authorization;
};

class ReplayEndpoint {
 public:
  // Answers request i (0-based, in arrival order) with responder(request body, i).
  using Responder = std::function<Scripted(const nlohmann::json& body, int index)>;

  explicit ReplayEndpoint(Responder responder) : responder_(std::move(responder)) {
    server_.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
      int index;
      nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
      {
        std::lock_guard lock(mu_);
        index = static_cast<int>(received_.size());
        received_.push_back({body, req.get_header_value("Authorization")});
      }
      const int now = ++in_flight_;
      for (int m = max_in_flight_; now > m && !max_in_flight_.compare_exchange_weak(m, now);) {
      }
      const Scripted s = responder_(body, index);
      if (s.delay_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(s.delay_s));
      --in_flight_;
      res.status = s.status;
      for (const auto& [k, v] : s.headers) res.set_header(k, v);
      res.set_content(s.body, "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    // Bound and listening already: connections queue until the accept loop runs.
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  // Answers the script in order; past its end, HTTP 500.
  explicit ReplayEndpoint(std::vector<Scripted> script)
      : ReplayEndpoint([script](const nlohmann::json&, int i) {
          return i < static_cast<int>(script.size()) ? script[static_cast<size_t>(i)]
                                                     : Scripted::error(500, "replay script exhausted");
        }) {}
  ~ReplayEndpoint() {
    for (int i = 0; i < 500 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    server_.stop();
    thread_.join();
  }
  ReplayEndpoint(const ReplayEndpoint&) = delete;
  ReplayEndpoint& operator=(const ReplayEndpoint&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  std::vector<Received> received() const {
    std::lock_guard lock(mu_);
    return received_;
  }
  int max_in_flight() const { return max_in_flight_; }

  // The text of the last user message of a request.
  static std::string last_user(const nlohmann::json& body) {
    std::string out;
    for (const auto& m : body["messages"])
      if (m.value("role", "") == "user") out = m.value("content", "");
    return out;
  }

 private:
  Responder responder_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  mutable std::mutex mu_;
  std::vector<Received> received_;
  std::atomic<int> in_flight_{0}, max_in_flight_{0};
};

}  // namespace fk::agent::test
