#include "agent/endpoint_client.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <thread>

#include "fk/status.h"

namespace fk::agent {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

json to_json(const std::vector<ChatMessage>& messages) {
  json out = json::array();
  for (const auto& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
  return out;
}

std::vector<ChatMessage> messages_from_json(const json& j) {
  std::vector<ChatMessage> out;
  for (const auto& m : j) out.push_back({m.value("role", ""), m.value("content", "")});
  return out;
}

size_t total_chars(const std::vector<ChatMessage>& messages) {
  size_t n = 0;
  for (const auto& m : messages) n += m.content.size();
  return n;
}

EndpointUrl parse_endpoint_url(const std::string& url) {
  const size_t scheme_end = url.find("://");
  FK_CHECK(scheme_end != std::string::npos, "endpoint '", url, "' must start with http:// or https://");
  const std::string scheme = url.substr(0, scheme_end);
  FK_CHECK(scheme == "http" || scheme == "https", "endpoint '", url, "': scheme must be http or https, got '", scheme,
           "'");
  const size_t path_at = url.find('/', scheme_end + 3);
  EndpointUrl u;
  u.origin = url.substr(0, path_at);
  FK_CHECK(u.origin.size() > scheme_end + 3, "endpoint '", url, "' names no host");
  std::string path = path_at == std::string::npos ? "" : url.substr(path_at);
  while (!path.empty() && path.back() == '/') path.pop_back();
  const std::string suffix = "/chat/completions";
  if (path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0)
    u.path = path;
  else if (path.empty())
    u.path = "/v1" + suffix;
  else
    u.path = path + suffix;
  return u;
}

json to_json(const ChatResponse& r) {
  json j = {{"ok", r.ok},
            {"http_status", r.http_status},
            {"attempts", r.attempts},
            {"seconds", r.seconds},
            {"finish_reason", r.finish_reason},
            {"usage",
             {{"prompt_tokens", r.prompt_tokens},
              {"completion_tokens", r.completion_tokens},
              {"estimated", r.usage_estimated}}}};
  if (!r.error.empty()) j["error"] = r.error;
  if (r.fatal) j["fatal"] = true;
  if (!r.attempt_errors.empty()) j["attempt_errors"] = r.attempt_errors;
  return j;
}

double backoff_delay_s(const EndpointOptions& o, int retry, double retry_after_s, double unit_random) {
  if (retry_after_s > 0) return std::min(retry_after_s, o.backoff_max_s);
  const double cap = std::min(o.backoff_max_s, o.backoff_initial_s * std::pow(2.0, retry));
  return std::clamp(unit_random, 0.0, 1.0) * cap;
}

std::string api_key_from_env(const std::string& var) {
  if (!var.empty()) {  // a named variable that is unset means no key, not a fallback
    const char* v = std::getenv(var.c_str());
    return v ? v : "";
  }
  for (const char* name : {"FK_AGENT_API_KEY", "OPENAI_API_KEY"})
    if (const char* v = std::getenv(name); v && *v) return v;
  return "";
}

ChatClient::ChatClient(EndpointOptions options) : options_(std::move(options)), url_(parse_endpoint_url(options_.url)) {
  FK_CHECK(options_.max_attempts >= 1, "max attempts must be >= 1, got ", options_.max_attempts);
  FK_CHECK(options_.timeout_s > 0, "request timeout must be > 0, got ", options_.timeout_s);
}

namespace {

std::string head(const std::string& s, size_t n = 300) { return s.size() > n ? s.substr(0, n) + "..." : s; }

// The text of a message's content: a string, null, or an array of {type: text, text} parts.
std::string content_text(const json& c) {
  if (c.is_string()) return c.get<std::string>();
  std::string out;
  if (c.is_array())
    for (const auto& part : c)
      if (part.is_object() && part.value("type", "") == "text" && part.contains("text") && part["text"].is_string())
        out += part["text"].get<std::string>();
  return out;
}

// What one attempt came to.
struct AttemptOutcome {
  enum Kind { ok, retry, give_up } kind = retry;
  std::string error;
  double retry_after_s = 0;
};

AttemptOutcome read_answer(const json& body, ChatResponse& r) {
  if (body.is_discarded() || !body.is_object()) return {AttemptOutcome::retry, "malformed response body (not JSON)"};
  if (body.contains("error") && !body.contains("choices"))
    return {AttemptOutcome::retry, "error in the response body: " + head(body["error"].dump())};
  if (!body.contains("choices") || !body["choices"].is_array() || body["choices"].empty() ||
      !body["choices"][0].is_object() || !body["choices"][0].contains("message"))
    return {AttemptOutcome::retry, "malformed response: no choices[0].message"};
  const json& choice = body["choices"][0];
  const json& msg = choice["message"];
  r.text = msg.contains("content") ? content_text(msg["content"]) : "";
  if (msg.contains("reasoning_content")) r.reasoning = content_text(msg["reasoning_content"]);
  r.finish_reason = choice.contains("finish_reason") && choice["finish_reason"].is_string()
                        ? choice["finish_reason"].get<std::string>()
                        : "";
  const json usage = body.value("usage", json::object());
  if (usage.is_object() && usage.contains("prompt_tokens") && usage["prompt_tokens"].is_number()) {
    r.prompt_tokens = usage["prompt_tokens"].get<int64_t>();
    r.completion_tokens = usage.value("completion_tokens", int64_t{0});
  } else {
    r.usage_estimated = true;
  }
  return {AttemptOutcome::ok, ""};
}

double retry_after(const httplib::Response& res) {
  if (!res.has_header("Retry-After")) return 0;
  char* end = nullptr;
  const std::string v = res.get_header_value("Retry-After");
  const double s = std::strtod(v.c_str(), &end);
  return end != v.c_str() && s > 0 ? s : 0;
}

}  // namespace

ChatResponse ChatClient::complete(const std::vector<ChatMessage>& messages) const {
  json body = {{"model", options_.model}, {"messages", to_json(messages)}};
  if (options_.temperature >= 0) body["temperature"] = options_.temperature;
  if (options_.max_completion_tokens > 0) body["max_tokens"] = options_.max_completion_tokens;
  const std::string payload = body.dump();

  thread_local std::mt19937_64 rng{std::random_device{}()};
  ChatResponse r;
  const Clock::time_point t0 = Clock::now();
  const auto secs = static_cast<time_t>(options_.timeout_s);
  const auto usecs = static_cast<time_t>((options_.timeout_s - static_cast<double>(secs)) * 1e6);
  for (int attempt = 0; attempt < options_.max_attempts; ++attempt) {
    ++r.attempts;
    httplib::Client cli(url_.origin);
    cli.set_connection_timeout(secs, usecs);
    cli.set_read_timeout(secs, usecs);
    cli.set_write_timeout(secs, usecs);
    httplib::Headers headers;
    if (!options_.api_key.empty()) headers.emplace("Authorization", "Bearer " + options_.api_key);
    const Clock::time_point ta = Clock::now();
    auto res = cli.Post(url_.path, headers, payload, "application/json");
    const double took = std::chrono::duration<double>(Clock::now() - ta).count();
    AttemptOutcome out;
    if (!res) {
      r.http_status = 0;
      out.error = took >= options_.timeout_s * 0.9
                      ? concat("no answer within the timeout of ", options_.timeout_s, " s (", httplib::to_string(res.error()), ")")
                      : concat("no HTTP answer: ", httplib::to_string(res.error()));
    } else {
      r.http_status = res->status;
      if (res->status == 200) {
        out = read_answer(json::parse(res->body, nullptr, false), r);
      } else if (res->status == 429 || res->status >= 500) {
        out = {AttemptOutcome::retry, concat("HTTP ", res->status, ": ", head(res->body)), retry_after(*res)};
      } else {
        out = {AttemptOutcome::give_up, concat("HTTP ", res->status, ": ", head(res->body))};
        r.fatal = res->status == 401 || res->status == 403 || res->status == 404;
      }
    }
    if (out.kind == AttemptOutcome::ok) {
      r.ok = true;
      r.error.clear();
      break;
    }
    r.error = out.error;
    r.attempt_errors.push_back(concat("attempt ", attempt + 1, ": ", out.error));
    if (out.kind == AttemptOutcome::give_up || attempt + 1 == options_.max_attempts) break;
    const double delay =
        backoff_delay_s(options_, attempt, out.retry_after_s, std::uniform_real_distribution<double>(0, 1)(rng));
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
  }
  if (r.ok && r.usage_estimated) {
    r.prompt_tokens = static_cast<int64_t>(total_chars(messages) / 4);
    r.completion_tokens = static_cast<int64_t>((r.text.size() + r.reasoning.size()) / 4);
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return r;
}

}  // namespace fk::agent
