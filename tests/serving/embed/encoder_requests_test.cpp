// The encoder endpoints' request parsing without HTTP: every input form (a string, strings,
// token ids, lists of them) with and without a tokenizer, the outputs and input_type
// extensions, refused fields, and OpenAI's base64 encoding of float32 values.
#include "serving/embed/encoder_requests.h"

#include <gtest/gtest.h>

#include "serving/http/openai_api.h"

namespace fk::serve {
namespace {

std::string param_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ApiError& e) {
    return e.param + ": " + e.what();
  }
  return "";
}

TEST(EncoderRequests, InputForms) {
  const auto tok = tokenizer::Tokenizer::from_file(std::string(FK_SOURCE_DIR) + "/tests/data/tokenizers/wordpiece_bert.json");
  auto parse = [&](const std::string& body, bool special) { return parse_embeddings_request(body, "m", &tok, special); };
  EXPECT_EQ(parse(R"({"model":"m","input":[5,6,7]})", true).inputs, (std::vector<TextIds>{{5, 6, 7}}));
  EXPECT_EQ(parse(R"({"input":[[5],[6,7]]})", true).inputs, (std::vector<TextIds>{{5}, {6, 7}}));
  const auto with = parse(R"({"input":"hello world"})", true).inputs[0];
  const auto without = parse(R"({"input":["hello world"]})", false).inputs[0];
  EXPECT_EQ(with.size(), without.size() + 2);  // [CLS] ... [SEP]
  EXPECT_EQ(std::vector<int32_t>(with.begin() + 1, with.end() - 1), without);
  const EmbeddingsRequest r = parse(R"({"input":[1],"outputs":["sparse","colbert"],"input_type":"query",
                                        "encoding_format":"base64","user":"u"})", true);
  EXPECT_FALSE(r.dense);
  EXPECT_TRUE(r.sparse && r.colbert && r.query && r.base64);
  const ScoreRequest s = parse_score_request(R"({"query":[1,2],"documents":[[3],[4,5]]})", "m", nullptr, false);
  EXPECT_EQ(s.queries, (std::vector<TextIds>{{1, 2}}));
  EXPECT_EQ(s.documents.size(), 2u);
}

TEST(EncoderRequests, RefusalsNameTheField) {
  auto embed = [](const std::string& body) {
    return param_of([&] { parse_embeddings_request(body, "m", nullptr, true); });
  };
  EXPECT_EQ(embed(R"({"input":"text"})").rfind("input: 'input' is text, but the model has no tokenizer.json", 0), 0u);
  EXPECT_EQ(embed(R"({"input":[1,-2]})").rfind("input: 'input' holds -2, not a token id", 0), 0u);
  EXPECT_EQ(embed(R"({"input":[[1],{"a":1}]})").rfind("input: 'input[1]' must be a string or a list", 0), 0u);
  EXPECT_EQ(embed(R"({"input":[1],"encoding_format":"hex"})").rfind("encoding_format:", 0), 0u);
  EXPECT_EQ(embed(R"({"input":[1],"outputs":["dense","maxsim"]})").rfind("outputs: unknown output 'maxsim'", 0), 0u);
  EXPECT_EQ(embed(R"({"input":[1],"dimensions":4})").rfind("dimensions:", 0), 0u);
  EXPECT_EQ(embed(R"({})").rfind("input: 'input' is required", 0), 0u);
  auto score = [](const std::string& body) { return param_of([&] { parse_score_request(body, "m", nullptr, false); }); };
  EXPECT_EQ(score(R"({"query":[1],"queries":[[1]],"documents":[[2]]})").rfind("query: give one of", 0), 0u);
  EXPECT_EQ(score(R"({"query":[[1]],"documents":[[2]]})").rfind("query: 'query' must be one text", 0), 0u);
  EXPECT_EQ(score(R"({"queries":[[1]],"documents":5})").rfind("documents:", 0), 0u);
}

TEST(EncoderRequests, Base64IsTheFloatsLittleEndianBytes) {
  EXPECT_EQ(base64_floats({1.0f}), "AACAPw==");         // 00 00 80 3f
  EXPECT_EQ(base64_floats({1.0f, -2.0f}), "AACAPwAAAMA=");  // ... 00 00 00 c0
  EXPECT_EQ(base64_floats({}), "");
}

}  // namespace
}  // namespace fk::serve
