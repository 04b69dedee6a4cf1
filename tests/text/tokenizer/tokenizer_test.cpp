// Round trips, streaming decode of random ids, NFC, and clear errors for bad files.
#include <gtest/gtest.h>

#include <random>

#include "fk/status.h"
#include "text/tokenizer.h"
#include "support/test_seed.h"
#include "text/tokenizer/unicode.h"

namespace {

using fk::tokenizer::IncrementalDecoder;
using fk::tokenizer::Tokenizer;
namespace uni = fk::tokenizer::unicode;

const std::filesystem::path kDir = std::filesystem::path(FK_SOURCE_DIR) / "tests/data/tokenizers";

// Random text from a pool mixing scripts, emoji (with ZWJ and modifiers), combining marks,
// digits, punctuation and whitespace runs.
std::string random_text(std::mt19937_64& rng) {
  static const std::vector<std::string> pool = {
      "a", "Z", "é", "ß", "中", "文", "の", "ア", "ع", "ب", "😀", "👨", "\u200d", "🏽", "\u0301", "1", "42", " ",
      "  ", "\n", "\t", "\r\n", "'s", "'LL", ".", "!", "(", "<|im_start|>", "<s>", "▁", "\u00a0", "한", "ि", "x"};
  std::uniform_int_distribution<size_t> len(0, 30), pick(0, pool.size() - 1);
  std::string s;
  for (size_t n = len(rng); n > 0; --n) s += pool[pick(rng)];
  return s;
}

TEST(Tokenizer, ByteLevelRoundTripsRandomText) {
  const auto tok = Tokenizer::from_file(kDir / "bytelevel_llama3.json");
  std::mt19937_64 rng(fk::test::seed_for("ByteLevelRoundTripsRandomText"));
  for (int i = 0; i < 500; ++i) {
    const std::string text = random_text(rng);
    EXPECT_EQ(tok.decode(tok.encode(text, false)), text) << "seed base " << fk::test::seed_base();
  }
}

TEST(Tokenizer, SentencePieceRoundTripsTextWithoutLeadingSpace) {
  // Byte fallback keeps every character; the Llama 2 decoder strips the prepended space.
  const auto tok = Tokenizer::from_file(kDir / "sp_bpe_llama2.json");
  for (std::string text : {"Hello world", "한국어 and 中文 😀", "x\ty\nz", "a  b"})
    EXPECT_EQ(tok.decode(tok.encode(text, true), true), text);
}

TEST(Tokenizer, IncrementalDecodeOfRandomIdsNeverSplitsUtf8) {
  std::mt19937_64 rng(fk::test::seed_for("IncrementalDecodeOfRandomIdsNeverSplitsUtf8"));
  for (const char* name : {"bytelevel_llama3", "bytelevel_qwen2", "sp_bpe_llama2", "sp_unigram"}) {
    const auto tok = Tokenizer::from_file(kDir / (std::string(name) + ".json"));
    std::uniform_int_distribution<int64_t> id(0, tok.vocab_size() - 1);
    for (int i = 0; i < 200; ++i) {
      std::vector<int64_t> ids(rng() % 12);
      for (auto& x : ids) x = id(rng);
      IncrementalDecoder dec(tok);
      std::string all;
      for (int64_t x : ids) {
        const std::string chunk = dec.add(x);
        EXPECT_TRUE(uni::is_valid_utf8(chunk));
        EXPECT_FALSE(chunk.ends_with("\xEF\xBF\xBD")) << name;
        all += chunk;
      }
      all += dec.flush();
      EXPECT_EQ(all, tok.decode(ids)) << name << " seed base " << fk::test::seed_base();
    }
  }
}


TEST(Tokenizer, Lookups) {
  const auto tok = Tokenizer::from_file(kDir / "bytelevel_llama3.json");
  EXPECT_EQ(tok.vocab_size(), 1006);
  const auto bos = tok.token_to_id("<|begin_of_text|>");
  ASSERT_TRUE(bos.has_value());
  EXPECT_EQ(tok.id_to_token(*bos), "<|begin_of_text|>");
  EXPECT_TRUE(tok.is_special(*bos));
  EXPECT_EQ(tok.encode("", true), std::vector<int64_t>{*bos});
  EXPECT_FALSE(tok.token_to_id("no such token").has_value());
  EXPECT_EQ(tok.id_to_token(123456), "");
}

TEST(Unicode, Nfc) {
  EXPECT_EQ(uni::nfc("e\u0301"), "\u00e9");
  EXPECT_EQ(uni::nfc("A\u030a"), "\u00c5");
  EXPECT_EQ(uni::nfc("\u1100\u1161\u11a8"), "\uac01");             // Hangul L V T
  EXPECT_EQ(uni::nfc("a\u0323\u0302"), "\u1ead");                 // ậ: dot below, then circumflex
  EXPECT_EQ(uni::nfc("a\u0302\u0323"), "\u1ead");                 // reordered by combining class
  EXPECT_EQ(uni::nfc("\u0301abc"), "\u0301abc");                  // lone mark stays
  EXPECT_EQ(uni::nfc("\u2126"), "\u03a9");                        // singleton Ohm sign
  EXPECT_EQ(uni::nfc("\u0958"), "\u0915\u093c");                  // composition exclusion
}

TEST(Unicode, LossyMatchesRust) {
  EXPECT_EQ(uni::from_utf8_lossy("a\xF0\x9F\x98"), "a\xEF\xBF\xBD");            // truncated: one U+FFFD
  EXPECT_EQ(uni::from_utf8_lossy("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");       // overlong: two
  EXPECT_EQ(uni::from_utf8_lossy("\xED\xA0\x80"), std::string(3 * 3, '\0').replace(0, 9, "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"));
}

void expect_error(const std::string& json, const std::string& needle) {
  try {
    Tokenizer::from_json(json, "bad.json");
    ADD_FAILURE() << "no error for " << json;
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, BadFilesGiveClearErrors) {
  const std::string bpe = R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
  expect_error("{not json", "malformed JSON");
  expect_error("[1, 2]", "not a JSON object");
  expect_error("{}", "missing \"model\"");
  expect_error(R"({"model": {"type": "WordLevel", "vocab": {}}})", "model type 'WordLevel'");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a c"]}})", "missing from the vocab");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["abc"]}})", "not two tokens");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}}})", "missing \"merges\"");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})", "malformed tokenizer");
  expect_error("{" + bpe + R"(, "pre_tokenizer": {"type": "UnicodeScripts"}})", "pre_tokenizer type 'UnicodeScripts'");
  expect_error("{" + bpe + R"(, "normalizer": {"type": "Precompiled", "precompiled_charsmap": ""}})",
               "normalizer type 'Precompiled'");
  expect_error("{" + bpe + R"(, "decoder": {"type": "CTC"}})", "decoder type 'CTC'");
  expect_error("{" + bpe + R"(, "post_processor": {"type": "Weird"}})", "post_processor type 'Weird'");
  expect_error("{" + bpe + R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "[a-z]+"},
               "behavior": "Isolated", "invert": false}})", "regex pattern '[a-z]+'");
  expect_error(R"({"model": {"type": "Unigram", "vocab": [["a"]]}})", "not [piece, score]");
  EXPECT_THROW(Tokenizer::from_file(kDir / "no_such_file.json"), fk::Error);
  // A minimal valid file works, and invalid UTF-8 input is rejected.
  const auto tok = Tokenizer::from_json("{" + bpe + "}");
  EXPECT_EQ(tok.encode("ab"), std::vector<int64_t>{2});
  EXPECT_THROW(tok.encode("a\xFF"), fk::Error);
}

}  // namespace
