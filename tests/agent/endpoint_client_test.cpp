// The chat client against a local replay endpoint: answers, retries on 5xx / 429 /
// malformed bodies / timeouts with backoff, no retry on other 4xx, usage accounting, and
// the API key only in the Authorization header.
#include "agent/endpoint_client.h"

#include <gtest/gtest.h>

#include "fk/status.h"

#include <cstdlib>

#include "agent/replay_endpoint.h"

namespace fk::agent {
namespace {

using test::ReplayEndpoint;
using test::Scripted;

EndpointOptions quick(const ReplayEndpoint& ep) {
  EndpointOptions o;
  o.url = ep.url();
  o.model = "replay-model";
  o.api_key = "sk-test-123";
  o.timeout_s = 5;
  o.max_attempts = 4;
  o.backoff_initial_s = 0.01;
  o.backoff_max_s = 0.05;
  o.temperature = 0.5;
  o.max_completion_tokens = 256;
  return o;
}

TEST(AgentEndpointUrl, AcceptsBaseUrlsAndFullPaths) {
  EXPECT_EQ(parse_endpoint_url("http://h:8000/v1").origin, "http://h:8000");
  EXPECT_EQ(parse_endpoint_url("http://h:8000/v1").path, "/v1/chat/completions");
  EXPECT_EQ(parse_endpoint_url("http://h:8000/v1/").path, "/v1/chat/completions");
  EXPECT_EQ(parse_endpoint_url("http://h:8000").path, "/v1/chat/completions");
  EXPECT_EQ(parse_endpoint_url("https://api.example.com/openai/v1/chat/completions").path,
            "/openai/v1/chat/completions");
  EXPECT_EQ(parse_endpoint_url("https://api.example.com/openai/v1/chat/completions").origin, "https://api.example.com");
  EXPECT_THROW(parse_endpoint_url("h:8000/v1"), fk::Error);
  EXPECT_THROW(parse_endpoint_url("ftp://h/v1"), fk::Error);
}

TEST(AgentBackoff, DoublesWithJitterUpToTheCapAndHonoursRetryAfter) {
  EndpointOptions o;
  o.backoff_initial_s = 1;
  o.backoff_max_s = 10;
  EXPECT_DOUBLE_EQ(backoff_delay_s(o, 0, 0, 1.0), 1);
  EXPECT_DOUBLE_EQ(backoff_delay_s(o, 3, 0, 1.0), 8);
  EXPECT_DOUBLE_EQ(backoff_delay_s(o, 6, 0, 1.0), 10);
  EXPECT_DOUBLE_EQ(backoff_delay_s(o, 3, 0, 0.25), 2);
  EXPECT_DOUBLE_EQ(backoff_delay_s(o, 0, 3, 0.5), 3);   // Retry-After wins
  EXPECT_DOUBLE_EQ(backoff_delay_s(o, 0, 99, 0.5), 10);  // but is capped
}

TEST(AgentApiKey, FromTheNamedVariableElseTheDefaults) {
  setenv("FK_AGENT_API_KEY", "fk-key", 1);
  setenv("OPENAI_API_KEY", "openai-key", 1);
  setenv("MY_KEY", "mine", 1);
  EXPECT_EQ(api_key_from_env(), "fk-key");
  EXPECT_EQ(api_key_from_env("MY_KEY"), "mine");
  EXPECT_EQ(api_key_from_env("UNSET_KEY_VARIABLE"), "");
  unsetenv("FK_AGENT_API_KEY");
  EXPECT_EQ(api_key_from_env(), "openai-key");
  unsetenv("OPENAI_API_KEY");
  EXPECT_EQ(api_key_from_env(), "");
  unsetenv("MY_KEY");
}

TEST(AgentChatClient, SendsTheRequestAndReadsAnswerAndUsage) {
  ReplayEndpoint ep({Scripted::answer("hello", 12, 3)});
  const ChatResponse r = ChatClient(quick(ep)).complete({{"system", "be brief"}, {"user", "hi"}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "hello");
  EXPECT_EQ(r.prompt_tokens, 12);
  EXPECT_EQ(r.completion_tokens, 3);
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.attempts, 1);
  const auto got = ep.received();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].authorization, "Bearer sk-test-123");
  EXPECT_EQ(got[0].body["model"], "replay-model");
  EXPECT_EQ(got[0].body["messages"][1]["content"], "hi");
  EXPECT_EQ(got[0].body["max_tokens"], 256);
  EXPECT_DOUBLE_EQ(got[0].body["temperature"].get<double>(), 0.5);
  EXPECT_EQ(to_json(r).dump().find("sk-test"), std::string::npos);
}

TEST(AgentChatClient, RetriesServerErrorsRateLimitsAndMalformedBodies) {
  Scripted limited = Scripted::error(429, "slow down");
  limited.headers = {{"Retry-After", "0.01"}};
  ReplayEndpoint ep({Scripted::error(500, "boom"), limited, Scripted::malformed(), Scripted::answer("fine")});
  const ChatResponse r = ChatClient(quick(ep)).complete({{"user", "hi"}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "fine");
  EXPECT_EQ(r.attempts, 4);
  ASSERT_EQ(r.attempt_errors.size(), 3u);
  EXPECT_NE(r.attempt_errors[0].find("HTTP 500"), std::string::npos);
  EXPECT_NE(r.attempt_errors[1].find("HTTP 429"), std::string::npos);
  EXPECT_NE(r.attempt_errors[2].find("malformed"), std::string::npos);
}

TEST(AgentChatClient, GivesUpAfterTheLastAttempt) {
  ReplayEndpoint ep({Scripted::error(503, "a"), Scripted::error(503, "b"), Scripted::error(503, "c"),
                     Scripted::error(503, "d"), Scripted::answer("too late")});
  const ChatResponse r = ChatClient(quick(ep)).complete({{"user", "hi"}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.attempts, 4);
  EXPECT_EQ(r.http_status, 503);
  EXPECT_NE(r.error.find("HTTP 503"), std::string::npos);
  EXPECT_FALSE(r.fatal);
  EXPECT_EQ(ep.received().size(), 4u);
}

TEST(AgentChatClient, DoesNotRetryOtherClientErrors) {
  ReplayEndpoint ep({Scripted::error(400, "context too long"), Scripted::answer("unused")});
  const ChatResponse r = ChatClient(quick(ep)).complete({{"user", "hi"}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.attempts, 1);
  EXPECT_NE(r.error.find("context too long"), std::string::npos);
  EXPECT_FALSE(r.fatal);
  ReplayEndpoint denied({Scripted::error(401, "bad key")});
  const ChatResponse d = ChatClient(quick(denied)).complete({{"user", "hi"}});
  EXPECT_TRUE(d.fatal);
  EXPECT_EQ(d.http_status, 401);
}

TEST(AgentChatClient, TimesOutASlowAnswerAndRetries) {
  ReplayEndpoint ep({Scripted::answer("slow").after(1.5), Scripted::answer("quick")});
  EndpointOptions o = quick(ep);
  o.timeout_s = 0.3;
  const ChatResponse r = ChatClient(o).complete({{"user", "hi"}});
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.text, "quick");
  ASSERT_EQ(r.attempt_errors.size(), 1u);
  EXPECT_NE(r.attempt_errors[0].find("timeout"), std::string::npos) << r.attempt_errors[0];
}

TEST(AgentChatClient, ConnectionRefusedIsRetriedThenReported) {
  int port;
  {
    ReplayEndpoint gone(std::vector<Scripted>{});
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  EndpointOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  o.max_attempts = 2;
  o.backoff_initial_s = 0.01;
  const ChatResponse r = ChatClient(o).complete({{"user", "hi"}});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.attempts, 2);
  EXPECT_NE(r.error.find("no HTTP answer"), std::string::npos) << r.error;
}

TEST(AgentChatClient, EstimatesUsageWhenTheServerReportsNone) {
  ReplayEndpoint ep({Scripted{200, R"({"choices":[{"message":{"role":"assistant","content":"abcdefgh"}}]})", 0, {}}});
  const ChatResponse r = ChatClient(quick(ep)).complete({{"user", std::string(400, 'x')}});
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(r.usage_estimated);
  EXPECT_EQ(r.prompt_tokens, 100);
  EXPECT_EQ(r.completion_tokens, 2);
}

TEST(AgentChatClient, ReadsContentPartsAndNullContent) {
  ReplayEndpoint ep({Scripted{200,
                              R"({"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},)"
                              R"({"type":"text","text":"b"}]},"finish_reason":"length"}]})",
                              0,
                              {}},
                     Scripted{200, R"({"choices":[{"message":{"role":"assistant","content":null}}]})", 0, {}}});
  const ChatClient c(quick(ep));
  const ChatResponse parts = c.complete({{"user", "hi"}});
  EXPECT_EQ(parts.text, "ab");
  EXPECT_EQ(parts.finish_reason, "length");
  const ChatResponse null_content = c.complete({{"user", "hi"}});
  EXPECT_TRUE(null_content.ok);
  EXPECT_EQ(null_content.text, "");
}

}  // namespace
}  // namespace fk::agent
