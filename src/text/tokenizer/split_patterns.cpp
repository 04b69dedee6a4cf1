// Hand-written matchers for the pre-tokenizer regexes real tokenizer.json files use. std::regex
// has no \p{L}/\p{N} or lookahead, and a general engine is not needed for a handful of fixed
// patterns. Each matcher reproduces the backtracking (first alternative wins) semantics of the
// Oniguruma regex HF runs:
//   GPT-2   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   Llama 3 (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//           ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//   Qwen2   the same with \p{N} instead of \p{N}{1,3}
//   Whitespace pre-tokenizer: \w+|[^\w\s]+
#include <string>

#include "text/tokenizer/components.h"
#include "text/tokenizer/unicode.h"

namespace fk::tokenizer {
namespace {

using unicode::is_letter;
using unicode::is_number;
using unicode::is_whitespace;

constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kWhitespaceWords = R"(\w+|[^\w\s]+)";

bool is_other(char32_t c) { return !is_whitespace(c) && !is_letter(c) && !is_number(c); }
bool is_newline(char32_t c) { return c == '\r' || c == '\n'; }
bool is_word(char32_t c) {
  return is_letter(c) || is_number(c) || c == '_' || (c >= 0x80 && (unicode::category(c) & unicode::kMark));
}

// 's 't 're 've 'm 'll 'd at i; returns the end or 0.
size_t contraction(const std::u32string& s, size_t i, bool ignore_case) {
  if (s[i] != '\'' || i + 1 >= s.size()) return 0;
  auto lower = [&](size_t k) -> char32_t {
    if (k >= s.size()) return 0;
    const char32_t c = s[k];
    return (ignore_case && c >= 'A' && c <= 'Z') ? c + 32 : c;
  };
  const char32_t a = lower(i + 1), b = lower(i + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return i + 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return i + 3;
  return 0;
}

template <class Pred>
size_t run(const std::u32string& s, size_t i, Pred p, size_t max = SIZE_MAX) {
  size_t j = i;
  while (j < s.size() && j - i < max && p(s[j])) ++j;
  return j;
}

// \s+(?!\S) then \s+ from a whitespace char at i: the run, less its last char when a non-space
// follows and the run is longer than one.
size_t whitespace_tail(const std::u32string& s, size_t i) {
  const size_t e = run(s, i, is_whitespace);
  if (e == s.size() || e - i == 1) return e;
  return e - 1;
}

size_t match_gpt2(const std::u32string& s, size_t i) {
  if (size_t e = contraction(s, i, false)) return e;
  size_t j = (s[i] == ' ' && i + 1 < s.size()) ? i + 1 : i;
  // " ?" is optional: when the char after the space does not fit, the space alone is tried
  // as the class start below (it never fits, being whitespace), so only j matters here.
  if (is_letter(s[j])) return run(s, j, is_letter);
  if (is_number(s[j])) return run(s, j, is_number);
  if (is_other(s[j])) return run(s, j, is_other);
  return whitespace_tail(s, i);
}

size_t match_llama3(const std::u32string& s, size_t i, size_t max_digits) {
  if (size_t e = contraction(s, i, true)) return e;
  const char32_t c = s[i];
  if (is_letter(c)) return run(s, i, is_letter);
  if (!is_newline(c) && !is_number(c) && i + 1 < s.size() && is_letter(s[i + 1]))
    return run(s, i + 1, is_letter);  // [^\r\n\p{L}\p{N}]\p{L}+ (c is not a letter here)
  if (is_number(c)) return run(s, i, is_number, max_digits);
  const size_t j = (c == ' ' && i + 1 < s.size() && is_other(s[i + 1])) ? i + 1 : i;
  if (is_other(s[j])) return run(s, run(s, j, is_other), is_newline);
  // c is whitespace. \s*[\r\n]+ : up to the last newline of the whitespace run.
  const size_t e = run(s, i, is_whitespace);
  for (size_t k = e; k > i; --k)
    if (is_newline(s[k - 1])) return k;
  return whitespace_tail(s, i);
}

size_t match_whitespace_words(const std::u32string& s, size_t i) {
  if (is_word(s[i])) return run(s, i, is_word);
  if (!is_whitespace(s[i])) return run(s, i, [](char32_t c) { return !is_word(c) && !is_whitespace(c); });
  return i;  // no match here
}

}  // namespace

std::optional<Pattern> recognize_pattern(std::string_view regex) {
  if (regex == kGpt2) return Pattern::kGpt2;
  if (regex == kLlama3) return Pattern::kLlama3;
  if (regex == kQwen2) return Pattern::kQwen2;
  if (regex == kWhitespaceWords) return Pattern::kWhitespaceWords;
  return std::nullopt;
}

MatchRanges find_matches(Pattern p, std::string_view text) {
  std::u32string s;
  std::vector<size_t> off;
  unicode::decode_utf8(text, s, off, "text to split");
  MatchRanges out;
  for (size_t i = 0; i < s.size();) {
    size_t e = i;
    switch (p) {
      case Pattern::kGpt2: e = match_gpt2(s, i); break;
      case Pattern::kLlama3: e = match_llama3(s, i, 3); break;
      case Pattern::kQwen2: e = match_llama3(s, i, 1); break;
      case Pattern::kWhitespaceWords: e = match_whitespace_words(s, i); break;
    }
    if (e == i) {
      ++i;
      continue;
    }
    out.emplace_back(off[i], off[e]);
    i = e;
  }
  return out;
}

}  // namespace fk::tokenizer
