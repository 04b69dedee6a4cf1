// single_word added tokens: a match counts only where the characters beside it are not word
// characters, with the Rust regex crate's Unicode \w that HF tokenizers uses (Alphabetic,
// marks, decimal digits, connector punctuation, join controls). The expected answers are
// HF tokenizers' (0.23): the same texts encoded with AddedToken("tok", single_word=True)
// on tests/data/tokenizers/bytelevel_llama3.json, noting whether "tok"'s id came out.
#include <gtest/gtest.h>

#include <string>

#include "text/tokenizer/added_tokens.h"

namespace fk::tokenizer {
namespace {

constexpr int64_t kTok = 7;

AddedVocabulary single_word_tok() {
  AddedVocabulary v;
  v.add({.id = kTok, .content = "tok", .single_word = true});
  return v;
}

bool matches_tok(const std::string& text) {
  for (const Segment& s : single_word_tok().split(text, /*normalized=*/false))
    if (s.id == kTok) return true;
  return false;
}

struct Case {
  const char* what;
  std::string text;
  bool hf_matches;
};

TEST(AddedTokens, SingleWordBoundariesFollowRustRegexWordClass) {
  const Case cases[] = {
      {"spaces", "a tok b", true},
      {"letter before", "atok", false},
      {"underscore before", "x_tok", false},
      {"hyphen before", "x-tok", true},
      {"superscript two (No) before", "x\u00B2tok", true},
      {"superscript two (No) after", "tok\u00B2", true},
      {"superscript one (No) before", "x\u00B9tok", true},
      {"one half (No) before", "\u00BDtok", true},
      {"one half (No) after", "tok\u00BD", true},
      {"undertie (Pc) before", "x\u203Ftok", false},
      {"undertie (Pc) after", "tok\u203F", false},
      {"character tie (Pc) before", "x\u2040tok", false},
      {"zero width joiner before", "x\u200Dtok", false},
      {"zero width joiner after", "tok\u200D", false},
      {"zero width non-joiner before", "x\u200Ctok", false},
      {"combining acute (Mn) before", "x\u0301tok", false},
      {"roman numeral one (Nl) before", "\u2160tok", false},
      {"circled A (So, Other_Alphabetic) before", "\u24B6tok", false},
      {"negative squared A (So, Other_Alphabetic) before", "\U0001F170tok", false},
  };
  for (const Case& c : cases) EXPECT_EQ(matches_tok(c.text), c.hf_matches) << c.what;
}

TEST(AddedTokens, RefusedSingleWordMatchLeavesTextWhole) {
  const auto segs = single_word_tok().split("x\u203Ftok", false);
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].id, -1);
  const auto kept = single_word_tok().split("x\u00B2tok", false);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[1].id, kTok);
  EXPECT_EQ(kept[1].begin, std::string("x\u00B2").size());
}

}  // namespace
}  // namespace fk::tokenizer
