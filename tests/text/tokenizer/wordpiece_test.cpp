// WordPiece and the BERT pipeline around it on hand-made vocabs: greedy longest match without
// backtracking, whole-word [UNK], the character (not byte) limit, the normalizer, pre-tokenizer
// and decoder steps, and named errors for bad blocks. Expected answers follow HF tokenizers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fk/status.h"
#include "text/tokenizer.h"
#include "text/tokenizer/unicode.h"

namespace {

using fk::tokenizer::Tokenizer;
using json = nlohmann::json;
using Ids = std::vector<int64_t>;

// Ids: [UNK] 0, [CLS] 1, [SEP] 2, then the pieces in order.
json wordpiece(int max_chars = 100, const std::string& unk = "[UNK]") {
  static const char* const kPieces[] = {"[UNK]", "[CLS]", "[SEP]", "un",    "unaff", "##aff", "##able", "ab", "a",
                                        "##bc",  "é",     "##é",   "hello", "##s",   ",",     "world",  ".",  "!",
                                        "?",     "中",    "文",    "x",     "$",     "'",     "s",      "it", "cafe"};
  json vocab = json::object();
  int id = 0;
  for (const char* p : kPieces) vocab[p] = id++;
  return {{"type", "WordPiece"},
          {"unk_token", unk},
          {"continuing_subword_prefix", "##"},
          {"max_input_chars_per_word", max_chars},
          {"vocab", vocab}};
}

Tokenizer load(const json& j) { return Tokenizer::from_json(j.dump()); }

Tokenizer bare(int max_chars = 100) {
  return load({{"model", wordpiece(max_chars)}, {"pre_tokenizer", {{"type", "WhitespaceSplit"}}}});
}

// The bert-base-uncased layout (cased: no lowercasing, so no accent stripping either).
Tokenizer bert(bool lowercase = true) {
  const json added = json::array({{{"id", 0}, {"content", "[UNK]"}, {"special", true}},
                                  {{"id", 1}, {"content", "[CLS]"}, {"special", true}},
                                  {{"id", 2}, {"content", "[SEP]"}, {"special", true}}});
  return load({{"model", wordpiece()},
               {"normalizer",
                {{"type", "BertNormalizer"},
                 {"clean_text", true},
                 {"handle_chinese_chars", true},
                 {"strip_accents", nullptr},
                 {"lowercase", lowercase}}},
               {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
               {"post_processor", {{"type", "BertProcessing"}, {"sep", {"[SEP]", 2}}, {"cls", {"[CLS]", 1}}}},
               {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
               {"added_tokens", added}});
}

TEST(WordPiece, GreedyLongestMatchFromTheLeft) {
  const auto tok = bare();
  EXPECT_EQ(tok.encode("unaffable"), (Ids{4, 6}));  // unaff ##able, not un ##aff ##able
  EXPECT_EQ(tok.encode("un"), (Ids{3}));
  EXPECT_EQ(tok.encode("éé"), (Ids{10, 11}));
  EXPECT_EQ(tok.encode("hellos world"), (Ids{12, 13, 15}));
}

TEST(WordPiece, AWordWithAnUnmatchedPartIsOneUnk) {
  const auto tok = bare();
  EXPECT_EQ(tok.encode("unaffxyz"), (Ids{0}));  // the matched prefix is dropped too
  EXPECT_EQ(tok.encode("hello zzz world"), (Ids{12, 0, 15}));
  // No backtracking: "ab" is taken first and "##c" is missing, although a ##bc would fit.
  EXPECT_EQ(tok.encode("abc"), (Ids{0}));
}

TEST(WordPiece, MaxInputCharsCountsCharactersNotBytes) {
  const auto tok = bare(5);
  EXPECT_EQ(tok.encode("ééééé"), (Ids{10, 11, 11, 11, 11}));  // 5 chars, 10 bytes
  EXPECT_EQ(tok.encode("éééééé"), (Ids{0}));                  // 6 chars: unk without trying
  EXPECT_EQ(tok.encode("unaff unaffable"), (Ids{4, 0}));
}

TEST(WordPiece, Lookups) {
  const auto tok = bare();
  EXPECT_EQ(tok.vocab_size(), 27);
  EXPECT_EQ(tok.token_to_id("##able"), 6);
  EXPECT_EQ(tok.id_to_token(5), "##aff");
  EXPECT_EQ(tok.id_to_token(99), "");
  EXPECT_FALSE(tok.token_to_id("able").has_value());
}

TEST(WordPiece, BertPipeline) {
  const auto tok = bert();
  // Lowercased and accents stripped; punctuation split off; [CLS] ... [SEP] around.
  EXPECT_EQ(tok.encode("Hello, WORLD!"), (Ids{1, 12, 14, 15, 17, 2}));
  EXPECT_EQ(tok.encode("CAFÉ", false), (Ids{26}));
  EXPECT_EQ(tok.encode("x$x", false), (Ids{21, 22, 21}));  // ASCII symbols count as punctuation
  // CJK ideographs become words of their own; controls vanish; any whitespace separates.
  EXPECT_EQ(tok.encode("中文x", false), (Ids{19, 20, 21}));
  EXPECT_EQ(tok.encode("hel\x01lo\u00a0world\u200b", false), (Ids{12, 15}));
  EXPECT_EQ(tok.encode("Hello?!?", false), (Ids{12, 18, 17, 18}));
  // Cased: nothing lowercased, so "Hello" is unknown.
  EXPECT_EQ(bert(false).encode("Hello hello", false), (Ids{0, 12}));
}

TEST(WordPiece, DecoderJoinsPiecesAndCleansUp) {
  const auto tok = bert();
  EXPECT_EQ(tok.decode(Ids{1, 12, 13, 14, 15, 16, 2}), "[CLS] hellos, world. [SEP]");
  EXPECT_EQ(tok.decode(Ids{1, 12, 13, 14, 15, 16, 2}, true), "hellos, world.");
  // HF cleans one token at a time: "it ' s" keeps its spaces, a leading ## stays.
  EXPECT_EQ(tok.decode(Ids{25, 23, 24}), "it ' s");
  EXPECT_EQ(tok.decode(Ids{13, 12}), "##s hello");
}

TEST(Unicode, Lowercase) {
  auto lower = [](std::u32string_view s) {
    std::u32string out;
    for (char32_t c : s) fk::tokenizer::unicode::append_lowercase(out, c);
    return out;
  };
  EXPECT_EQ(lower(U"ABC xyz"), U"abc xyz");
  EXPECT_EQ(lower(U"\u0130"), U"i\u0307");                         // the one two-character mapping
  EXPECT_EQ(lower(U"\u03a3\u0391\u03a3"), U"\u03c3\u03b1\u03c3");  // no final sigma, per character
  EXPECT_EQ(lower(U"\u01c5\u1e9e\u0100\u0101"), U"\u01c6\u00df\u0101\u0101");
  EXPECT_EQ(lower(U"\u2160\u24b6\U00010400"), U"\u2170\u24d0\U00010428");
}

void expect_error(const json& j, const std::string& needle) {
  try {
    Tokenizer::from_json(j.dump(), "bad.json");
    ADD_FAILURE() << "no error for " << j.dump();
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
  }
}

// The wordpiece() block with `key` set to `value` (removed when null).
json model_with(const char* key, const json& value) {
  json m = wordpiece();
  if (value.is_null())
    m.erase(key);
  else
    m[key] = value;
  return {{"model", m}};
}

// A valid WordPiece file with one more top-level block.
json file_with(const char* key, const json& value) { return {{"model", wordpiece()}, {key, value}}; }

TEST(WordPiece, BadBlocksGiveNamedErrors) {
  expect_error(model_with("unk_token", nullptr), "model WordPiece: missing \"unk_token\"");
  expect_error(model_with("continuing_subword_prefix", nullptr), "missing \"continuing_subword_prefix\"");
  expect_error(model_with("max_input_chars_per_word", nullptr), "missing \"max_input_chars_per_word\"");
  expect_error(model_with("vocab", nullptr), "missing \"vocab\"");
  expect_error(model_with("max_input_chars_per_word", -1), "max_input_chars_per_word must be a count");
  expect_error(model_with("max_input_chars_per_word", "100"), "max_input_chars_per_word must be a count");
  expect_error(model_with("vocab", {{"a", -3}}), "out of range");
  expect_error(model_with("vocab", json::array({"a"})), "vocab must be a map");
  expect_error(model_with("vocab", {{"a", "zero"}}), "malformed tokenizer");
  const json bert_norm = {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}};
  expect_error(file_with("normalizer", bert_norm), "normalizer BertNormalizer: missing \"lowercase\"");
  json bad_accents = bert_norm;
  bad_accents["lowercase"] = true;
  bad_accents["strip_accents"] = "yes";
  expect_error(file_with("normalizer", bad_accents), "\"strip_accents\" must be true, false or null");
  expect_error(file_with("decoder", {{"type", "WordPiece"}, {"cleanup", true}}),
               "decoder WordPiece: missing \"prefix\"");
  expect_error(file_with("decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", "yes"}}),
               "\"cleanup\" must be true or false");
  // HF hands TemplateProcessing's parts to the next processor one by one (or panics): refused.
  const json templ = {{"type", "TemplateProcessing"},
                      {"single", json::array({{{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                      {"special_tokens", json::object()}};
  const json bert_post = {{"type", "BertProcessing"}, {"sep", {"[SEP]", 2}}, {"cls", {"[CLS]", 1}}};
  expect_error(file_with("post_processor", {{"type", "Sequence"}, {"processors", {templ, bert_post}}}),
               "after a TemplateProcessing");
  // HF only complains about a missing unk token when a word needs it.
  const auto tok = load({{"model", wordpiece(100, "[NOPE]")}});
  EXPECT_EQ(tok.encode("hello"), (Ids{12}));
  try {
    tok.encode("zzz");
    ADD_FAILURE() << "no error for a missing unk token";
  } catch (const fk::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unk_token '[NOPE]' is not in the vocab"), std::string::npos) << e.what();
  }
}

TEST(WordPiece, ModelWithoutTypeIsRecognized) {
  json m = wordpiece();
  m.erase("type");
  EXPECT_EQ(load({{"model", m}}).encode("unaffable"), (Ids{4, 6}));
}

}  // namespace
