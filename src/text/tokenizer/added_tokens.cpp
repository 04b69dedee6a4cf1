#include "text/tokenizer/added_tokens.h"

#include "fk/status.h"
#include "text/tokenizer/unicode.h"

namespace fk::tokenizer {
namespace {

// The code point ending just before byte `pos` / starting at byte `pos`.
char32_t cp_before(std::string_view s, size_t pos) {
  size_t b = pos;
  while (b > 0 && (static_cast<unsigned char>(s[b - 1]) & 0xC0) == 0x80) --b;
  if (b > 0) --b;
  std::u32string cps;
  std::vector<size_t> off;
  unicode::decode_utf8(s.substr(b, pos - b), cps, off, "text");
  return cps.empty() ? 0 : cps[0];
}
char32_t cp_at(std::string_view s, size_t pos) {
  const size_t n = std::min<size_t>(unicode::utf8_length(static_cast<unsigned char>(s[pos])), s.size() - pos);
  std::u32string cps;
  std::vector<size_t> off;
  unicode::decode_utf8(s.substr(pos, n), cps, off, "text");
  return cps.empty() ? 0 : cps[0];
}
// HF decides single_word boundaries with the regexes \w$ and ^\w of the Rust regex crate,
// whose Unicode \w is not "letter or number": ² and ½ (No) are not word characters, ‿
// (Pc), ZWJ (Join_Control) and Ⓐ (Other_Alphabetic) are.
bool is_word_char(char32_t c) {
  if (c < 0x80) return c == '_' || unicode::is_letter(c) || unicode::is_number(c);
  return (unicode::category(c) & unicode::kWord) != 0;
}

}  // namespace

void AddedVocabulary::add(AddedToken t) {
  FK_CHECK(!t.content.empty(), "added token ", t.id, " has empty content");
  max_len_ = std::max(max_len_, t.content.size());
  max_id_ = std::max(max_id_, t.id);
  by_id_[t.id] = tokens_.size();
  by_content_[t.content] = tokens_.size();
  tokens_.push_back(std::move(t));
}

const AddedToken* AddedVocabulary::by_id(int64_t id) const {
  const auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}
const AddedToken* AddedVocabulary::by_content(std::string_view c) const {
  const auto it = by_content_.find(std::string(c));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

std::vector<Segment> AddedVocabulary::split(std::string_view text, bool normalized) const {
  std::vector<Segment> out;
  size_t done = 0;  // text before this is already in `out`
  for (size_t pos = 0; pos < text.size();) {
    // Longest token starting at pos.
    const AddedToken* hit = nullptr;
    for (size_t len = std::min(max_len_, text.size() - pos); len > 0 && !hit; --len) {
      const auto it = by_content_.find(std::string(text.substr(pos, len)));
      if (it != by_content_.end() && tokens_[it->second].normalized == normalized) hit = &tokens_[it->second];
    }
    if (!hit) {
      ++pos;
      continue;
    }
    size_t b = pos, e = pos + hit->content.size();
    const size_t next = e;  // matching resumes after the token itself
    if (hit->single_word) {
      const bool left_ok = b == 0 || !is_word_char(cp_before(text, b));
      const bool right_ok = e == text.size() || !is_word_char(cp_at(text, e));
      if (!left_ok || !right_ok) {  // HF skips this match; the search goes on after it
        pos = next;
        continue;
      }
    }
    if (hit->lstrip) {
      while (b > done && unicode::is_whitespace(cp_before(text, b))) {
        size_t k = b - 1;
        while (k > 0 && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
        b = k;
      }
    }
    if (hit->rstrip) {
      while (e < text.size() && unicode::is_whitespace(cp_at(text, e)))
        e += unicode::utf8_length(static_cast<unsigned char>(text[e]));
    }
    if (b > done) out.push_back({-1, done, b});
    out.push_back({hit->id, b, e});
    done = e;
    pos = std::max(next, e);
  }
  if (done < text.size()) out.push_back({-1, done, text.size()});
  return out;
}

}  // namespace fk::tokenizer
