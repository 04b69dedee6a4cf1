// Every golden case (made by tests/data/tokenizers/make_goldens.py with HF `tokenizers`) must
// encode to exactly HF's ids and decode to HF's text, in full and incrementally.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "text/tokenizer.h"
#include "text/tokenizer/unicode.h"

namespace {

const std::filesystem::path kDir = std::filesystem::path(FK_SOURCE_DIR) / "tests/data/tokenizers";

nlohmann::json load_golden(const std::string& name) {
  std::ifstream in(kDir / (name + ".golden.json"));
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

std::string show(const std::string& s) { return nlohmann::json(s).dump(); }

class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, EncodeMatchesHf) {
  const auto tok = fk::tokenizer::Tokenizer::from_file(kDir / (GetParam() + ".json"));
  const auto g = load_golden(GetParam());
  ASSERT_GE(g["cases"].size(), 100u);
  for (const auto& c : g["cases"]) {
    const std::string text = c["text"];
    EXPECT_EQ(tok.encode(text, true), c["ids"].get<std::vector<int64_t>>()) << show(text);
    EXPECT_EQ(tok.encode(text, false), c["ids_plain"].get<std::vector<int64_t>>()) << show(text);
  }
}

TEST_P(Golden, DecodeMatchesHf) {
  const auto tok = fk::tokenizer::Tokenizer::from_file(kDir / (GetParam() + ".json"));
  for (const auto& c : load_golden(GetParam())["cases"]) {
    const auto ids = c["ids"].get<std::vector<int64_t>>();
    EXPECT_EQ(tok.decode(ids, false), c["decoded"].get<std::string>()) << show(c["text"]);
    EXPECT_EQ(tok.decode(ids, true), c["decoded_skip"].get<std::string>()) << show(c["text"]);
  }
}

TEST_P(Golden, IncrementalDecodeEqualsFullDecode) {
  const auto tok = fk::tokenizer::Tokenizer::from_file(kDir / (GetParam() + ".json"));
  for (const auto& c : load_golden(GetParam())["cases"]) {
    for (bool skip : {false, true}) {
      fk::tokenizer::IncrementalDecoder dec(tok, skip);
      std::string all;
      for (int64_t id : c["ids"].get<std::vector<int64_t>>()) {
        const std::string chunk = dec.add(id);
        EXPECT_TRUE(fk::tokenizer::unicode::is_valid_utf8(chunk)) << show(c["text"]);
        all += chunk;
      }
      all += dec.flush();
      EXPECT_EQ(all, c[skip ? "decoded_skip" : "decoded"].get<std::string>()) << show(c["text"]) << " skip " << skip;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, Golden,
                         ::testing::Values("bytelevel_llama3", "bytelevel_qwen2", "bytelevel_gpt2", "sp_bpe_llama2",
                                           "sp_unigram", "wordpiece_bert", "wordpiece_bert_cased"));

}  // namespace
