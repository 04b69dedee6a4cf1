// A client for any OpenAI-compatible chat endpoint (POST .../chat/completions): bounded
// retries with exponential backoff and jitter on 429, 5xx, connection errors, timeouts and
// malformed bodies; a per-request timeout; token usage from the response (estimated when
// the server reports none). A 4xx other than 429 is not retried. The API key goes into the
// Authorization header only: nothing here logs or returns it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fk::agent {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};
nlohmann::json to_json(const std::vector<ChatMessage>& messages);
std::vector<ChatMessage> messages_from_json(const nlohmann::json& j);
size_t total_chars(const std::vector<ChatMessage>& messages);

// "http://host:8000/v1" (a base URL, as OpenAI clients take it), "http://host:8000" (then
// /v1 is added) or the full ".../chat/completions".
struct EndpointUrl {
  std::string origin;  // scheme://host[:port]
  std::string path;    // /v1/chat/completions
};
EndpointUrl parse_endpoint_url(const std::string& url);

struct EndpointOptions {
  std::string url;
  std::string model;
  std::string api_key;                // empty: no Authorization header
  double timeout_s = 600;             // per attempt: connect, send, and wait for the answer
  int max_attempts = 5;               // first try included
  double backoff_initial_s = 1;       // doubled per retry, full jitter, capped
  double backoff_max_s = 60;
  double temperature = 0.7;           // < 0: not sent (the server's default)
  int64_t max_completion_tokens = 0;  // 0: not sent
};

struct ChatResponse {
  bool ok = false;
  std::string text;                 // choices[0].message.content
  std::string reasoning;            // reasoning_content, where a server returns it
  std::string finish_reason;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  bool usage_estimated = false;     // no usage in the response: 4 characters per token
  int http_status = 0;              // of the last attempt (0: no HTTP answer)
  std::string error;                // why not ok (last attempt)
  bool fatal = false;               // 401/403/404: retrying later will not help either
  std::vector<std::string> attempt_errors;  // one line per failed attempt
  int attempts = 0;
  double seconds = 0;
  int64_t total_tokens() const { return prompt_tokens + completion_tokens; }
};
nlohmann::json to_json(const ChatResponse& r);  // without the text fields

class ChatClient {
 public:
  explicit ChatClient(EndpointOptions options);
  // Thread-safe: each call opens its own connection.
  ChatResponse complete(const std::vector<ChatMessage>& messages) const;
  const EndpointOptions& options() const { return options_; }

 private:
  EndpointOptions options_;
  EndpointUrl url_;
};

// The delay before retry number `retry` (0-based): uniform in [0, min(max, initial * 2^retry)]
// (full jitter), or the server's Retry-After when it asked for one (capped at max).
double backoff_delay_s(const EndpointOptions& o, int retry, double retry_after_s, double unit_random);

// The API key from the environment: `var` if given, else FK_AGENT_API_KEY, else
// OPENAI_API_KEY; empty when none is set.
std::string api_key_from_env(const std::string& var = "");

}  // namespace fk::agent
