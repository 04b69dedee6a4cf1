// ShareGPT datasets for `fk bench serve`: which conversations become requests (first
// human turn answered by gpt, length filters, the output-length override), seeded sampling
// and reuse when too few pass, clear errors for malformed files, and a short benchmark of
// ShareGPT requests against the in-process server.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "serving/http/serve_test_server.h"
#include "serving/bench/serving_bench.h"
#include "serving/bench/sharegpt_dataset.h"

namespace fk::serve {
namespace {

using nlohmann::json;

const std::string kFile = std::string(FK_SOURCE_DIR) + "/tests/data/serve/sharegpt_small.json";

const tokenizer::Tokenizer& tok() {
  static const tokenizer::Tokenizer t = tokenizer::Tokenizer::from_file(fixtures::test_tokenizer_path());
  return t;
}

// The file's human turns by their text -> the conversation id.
std::map<std::string, std::string> human_turns() {
  std::ifstream f(kFile);
  const json data = json::parse(f);
  std::map<std::string, std::string> out;
  for (const json& e : data)
    for (const json& t : e["conversations"])
      if (t["from"] == "human") out[t["value"]] = e["id"];
  return out;
}

std::string conversation_of(const BenchRequest& r) {
  const auto turns = human_turns();
  const auto it = turns.find(tok().decode(r.prompt, /*skip_special_tokens=*/true));
  return it == turns.end() ? "?" : it->second;
}

ShareGptOptions options(int64_t n, uint64_t seed = 1) {
  ShareGptOptions o;
  o.path = kFile;
  o.num_prompts = n;
  o.seed = seed;
  return o;
}

TEST(ShareGpt, FirstHumanTurnAnsweredByGptWithinTheLimits) {
  const ShareGptSample s = sample_sharegpt(options(1000), tok());
  EXPECT_EQ(s.conversations, 25);
  // 25 entries, of which single-turn, no-turns, no-answer, short-prompt and short-answer
  // give no request; "long" (about 600 tokens) is within the default limits.
  EXPECT_EQ(s.unique_prompts, 20);
  ASSERT_EQ(s.requests.size(), 1000u) << "fewer usable conversations than asked: reused";
  std::set<std::string> ids;
  for (int64_t i = 0; i < s.unique_prompts; ++i) {
    const BenchRequest& r = s.requests[static_cast<size_t>(i)];
    ids.insert(conversation_of(r));
    EXPECT_GE(r.prompt.size(), 4u);
    EXPECT_GE(r.output_len, 4);
    EXPECT_EQ(r.prompt[0], *tok().token_to_id("<|begin_of_text|>")) << "special tokens added as for a text prompt";
  }
  EXPECT_EQ(ids.size(), 20u);
  for (const char* skipped : {"single-turn", "no-turns", "no-answer", "short-prompt", "short-answer", "?"})
    EXPECT_EQ(ids.count(skipped), 0u) << skipped;
  for (const char* kept : {"gpt-first", "system-first", "multi-turn", "long"}) EXPECT_EQ(ids.count(kept), 1u) << kept;
  // Reused in the same order.
  EXPECT_EQ(s.requests[20].prompt, s.requests[0].prompt);
}

TEST(ShareGpt, OutputLengthIsTheAnswersTokens) {
  for (const BenchRequest& r : sample_sharegpt(options(20), tok()).requests)
    if (conversation_of(r) == "system-first")
      EXPECT_EQ(r.output_len,
                static_cast<int64_t>(tok().encode("100 degrees Celsius, or 212 degrees Fahrenheit.", false).size()));
}

TEST(ShareGpt, SeededSampling) {
  auto prompts = [](uint64_t seed) {
    std::vector<std::vector<int64_t>> p;
    for (const BenchRequest& r : sample_sharegpt(options(8, seed), tok()).requests) p.push_back(r.prompt);
    return p;
  };
  EXPECT_EQ(prompts(5), prompts(5));
  EXPECT_NE(prompts(5), prompts(6));
}

TEST(ShareGpt, OutputLengthOverrideAndLengthLimits) {
  ShareGptOptions o = options(1000);
  o.output_len = 7;
  ShareGptSample s = sample_sharegpt(o, tok());
  EXPECT_EQ(s.unique_prompts, 21) << "short-answer counts once its answer's length no longer matters";
  for (const BenchRequest& r : s.requests) EXPECT_EQ(r.output_len, 7);

  o = options(1000);
  o.max_prompt_len = 60;  // "long" is about 600 tokens
  s = sample_sharegpt(o, tok());
  EXPECT_EQ(s.unique_prompts, 19);
  o = options(1000);
  o.max_total_len = 100;
  s = sample_sharegpt(o, tok());
  for (int64_t i = 0; i < s.unique_prompts; ++i) {
    const BenchRequest& r = s.requests[static_cast<size_t>(i)];
    EXPECT_LE(static_cast<int64_t>(r.prompt.size()) + r.output_len, 100);
  }
  EXPECT_LT(s.unique_prompts, 19);
}

std::string error_for(const std::string& content, ShareGptOptions o = options(4)) {
  const std::string path =
      ::testing::TempDir() + "/sharegpt_bad_" + std::to_string(std::hash<std::string>{}(content)) + ".json";
  std::ofstream(path) << content;
  o.path = path;
  try {
    sample_sharegpt(o, tok());
  } catch (const Error& e) {
    std::remove(path.c_str());
    return e.what();
  }
  std::remove(path.c_str());
  return "";
}

TEST(ShareGpt, MalformedFilesAreClearErrors) {
  struct Case {
    std::string content, expected;
  };
  const std::vector<Case> cases = {
      {"[{\"id\": \"a\", \"conversations\": [", "not valid JSON"},
      {R"({"conversations": []})", "must hold a JSON list of conversations, got object"},
      {R"([{"id": "a", "conversations": []}, 7])", "entry 1: must be an object with 'conversations', got number"},
      {R"([{"id": "a", "conversations": []}, {"id": "x"}])", "entry 1 (id \"x\"): 'conversations' must be a list"},
      {R"([{"id": 12, "conversations": [{"from": "human"}]}])", "entry 0 (id 12): turn 0 must be an object with string"},
      {R"([{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": 3}]}])",
       "entry 0: turn 1 must be an object with string 'from' and 'value'"},
      {R"([{"id": "a", "conversations": [{"from": "human", "value": "Hi"},
                                          {"from": "gpt", "value": "Hello there, friend."}]}])",
       "none of its 1 conversations gives a request within the length limits"},
  };
  for (const Case& c : cases) {
    const std::string e = error_for(c.content);
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.content << " -> " << e;
    EXPECT_NE(e.find("sharegpt_bad_"), std::string::npos) << "names the file: " << e;
  }
  ShareGptOptions missing = options(4);
  missing.path = "/nonexistent/sharegpt.json";
  try {
    sample_sharegpt(missing, tok());
    ADD_FAILURE() << "a missing file was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read /nonexistent/sharegpt.json"), std::string::npos) << e.what();
  }
}

TEST(ShareGpt, BenchmarkOfShareGptRequestsAgainstFkServe) {
  fixtures::TextModelDir model("sharegpt-bench");
  fixtures::TestServer server(model.engine(), 16);
  ShareGptOptions o = options(12, 3);
  o.max_total_len = 250;  // the server's context is 256 tokens
  const ShareGptSample s = sample_sharegpt(o, tok());
  ServingBenchConfig c;
  c.port = server.port();
  c.model = "tiny";
  c.max_concurrency = 4;
  double duration = 0;
  const auto outcomes = run_serving_bench(c, s.requests, &duration);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_TRUE(outcomes[i].ok) << i << ": " << outcomes[i].error;
    EXPECT_EQ(outcomes[i].prompt_tokens, static_cast<int64_t>(s.requests[i].prompt.size()));
  }
  const json j = summarize(outcomes, duration);
  EXPECT_EQ(j["completed"], 12);
  int64_t expected_out = 0;
  for (const BenchRequest& r : s.requests) expected_out += r.output_len;
  EXPECT_EQ(j["total_output_tokens"], expected_out);
}

}  // namespace
}  // namespace fk::serve
