// Pre-tokenizers: split normalized text into the words the model sees.
#include <array>

#include "fk/status.h"
#include "text/tokenizer/components.h"
#include "text/tokenizer/unicode.h"

namespace fk::tokenizer {
namespace {

// GPT-2's map: printable bytes stand for themselves, the other 68 take code points 256.. in order,
// so every byte becomes a visible character and BPE never sees spaces or control bytes.
struct ByteMap {
  std::array<std::string, 256> to_str;
  std::array<int16_t, 512> from_cp;  // code point (< 512) -> byte, or -1
  ByteMap() {
    from_cp.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      const char32_t cp = printable ? b : next++;
      unicode::append_utf8(to_str[b], cp);
      from_cp[cp] = static_cast<int16_t>(b);
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Behavior parse_behavior(const json& j, std::string_view where) {
  const std::string b = j.is_string() ? j.get<std::string>() : "";
  if (b == "Removed") return Behavior::kRemoved;
  if (b == "Isolated") return Behavior::kIsolated;
  if (b == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::kMergedWithNext;
  if (b == "Contiguous") return Behavior::kContiguous;
  fail_unsupported(where, concat("split behavior '", j.dump(), "'"));
}

// Cuts one piece by match ranges the way HF's NormalizedString::split does for each behavior.
void split_by(const Piece& p, const MatchRanges& matches, Behavior behavior, bool invert, std::vector<Piece>& out) {
  struct Seg { size_t b, e; bool match; };
  std::vector<Seg> segs;
  size_t pos = 0;
  for (auto [b, e] : matches) {
    if (b > pos) segs.push_back({pos, b, invert});
    segs.push_back({b, e, !invert});
    pos = e;
  }
  if (pos < p.text.size()) segs.push_back({pos, p.text.size(), invert});
  std::vector<std::pair<size_t, size_t>> ranges;
  for (size_t i = 0; i < segs.size(); ++i) {
    const Seg& s = segs[i];
    switch (behavior) {
      case Behavior::kRemoved:
        if (!s.match) ranges.emplace_back(s.b, s.e);
        break;
      case Behavior::kIsolated:
        ranges.emplace_back(s.b, s.e);
        break;
      case Behavior::kContiguous:
        if (s.match && !ranges.empty() && i > 0 && segs[i - 1].match)
          ranges.back().second = s.e;
        else
          ranges.emplace_back(s.b, s.e);
        break;
      case Behavior::kMergedWithPrevious:
        if (s.match && !ranges.empty() && i > 0 && !segs[i - 1].match)
          ranges.back().second = s.e;
        else
          ranges.emplace_back(s.b, s.e);
        break;
      case Behavior::kMergedWithNext:
        if (!s.match && !ranges.empty() && i > 0 && segs[i - 1].match)
          ranges.back().second = s.e;
        else
          ranges.emplace_back(s.b, s.e);
        break;
    }
  }
  for (auto [b, e] : ranges)
    if (e > b) out.push_back({p.text.substr(b, e - b), p.at_origin && b == 0});
}

// Applies f(piece, out) to every piece.
template <class F>
void for_each_piece(std::vector<Piece>& pieces, F f) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  for (const Piece& p : pieces) f(p, out);
  pieces = std::move(out);
}

// Matches of one literal string, left to right, non-overlapping.
MatchRanges literal_matches(std::string_view text, std::string_view lit) {
  MatchRanges m;
  if (lit.empty()) return m;
  for (size_t pos = text.find(lit); pos != std::string_view::npos; pos = text.find(lit, pos + lit.size()))
    m.emplace_back(pos, pos + lit.size());
  return m;
}

// Matches of single code points satisfying pred (runs joined when `runs`).
template <class Pred>
MatchRanges char_matches(std::string_view text, Pred pred, bool runs) {
  std::u32string s;
  std::vector<size_t> off;
  unicode::decode_utf8(text, s, off, "text to split");
  MatchRanges m;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!pred(s[i])) continue;
    if (runs && !m.empty() && m.back().second == off[i])
      m.back().second = off[i + 1];
    else
      m.emplace_back(off[i], off[i + 1]);
  }
  return m;
}

class ByteLevelPre final : public PreTokenizer {
 public:
  ByteLevelPre(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void split(std::vector<Piece>& pieces) const override {
    for_each_piece(pieces, [&](const Piece& p0, std::vector<Piece>& out) {
      Piece p = p0;
      if (add_prefix_space_ && !p.text.starts_with(' ')) p.text.insert(0, " ");
      std::vector<Piece> words;
      if (use_regex_)
        split_by(p, find_matches(Pattern::kGpt2, p.text), Behavior::kIsolated, false, words);
      else if (!p.text.empty())
        words.push_back(p);
      for (Piece& w : words) {
        std::string mapped;
        mapped.reserve(w.text.size() * 2);
        for (char ch : w.text) mapped += byte_map().to_str[static_cast<unsigned char>(ch)];
        out.push_back({std::move(mapped), w.at_origin});
      }
    });
  }

 private:
  bool add_prefix_space_, use_regex_;
};

class SplitPre final : public PreTokenizer {
 public:
  SplitPre(std::optional<Pattern> pattern, std::string literal, Behavior behavior, bool invert)
      : pattern_(pattern), literal_(std::move(literal)), behavior_(behavior), invert_(invert) {}
  void split(std::vector<Piece>& pieces) const override {
    for_each_piece(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      split_by(p, pattern_ ? find_matches(*pattern_, p.text) : literal_matches(p.text, literal_), behavior_, invert_,
               out);
    });
  }

 private:
  std::optional<Pattern> pattern_;
  std::string literal_;
  Behavior behavior_;
  bool invert_;
};

enum class Prepend { kAlways, kFirst, kNever };

class MetaspacePre final : public PreTokenizer {
 public:
  MetaspacePre(std::string replacement, Prepend scheme, bool split)
      : rep_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void split(std::vector<Piece>& pieces) const override {
    for_each_piece(pieces, [&](const Piece& p0, std::vector<Piece>& out) {
      Piece p{std::string(), p0.at_origin};
      for (char ch : p0.text) {
        if (ch == ' ') p.text += rep_; else p.text += ch;
      }
      const bool prepend = scheme_ == Prepend::kAlways || (scheme_ == Prepend::kFirst && p.at_origin);
      if (prepend && !p.text.starts_with(rep_)) p.text.insert(0, rep_);
      if (split_)
        split_by(p, literal_matches(p.text, rep_), Behavior::kMergedWithNext, false, out);
      else if (!p.text.empty())
        out.push_back(std::move(p));
    });
  }

 private:
  std::string rep_;
  Prepend scheme_;
  bool split_;
};

class SequencePre final : public PreTokenizer {
 public:
  explicit SequencePre(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void split(std::vector<Piece>& pieces) const override {
    for (const auto& s : steps_) s->split(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

// Digits, Punctuation and WhitespaceSplit: splits by a per-character predicate.
template <class Pred>
class CharClassPre final : public PreTokenizer {
 public:
  CharClassPre(Pred pred, bool runs, Behavior behavior) : pred_(pred), runs_(runs), behavior_(behavior) {}
  void split(std::vector<Piece>& pieces) const override {
    for_each_piece(pieces, [&](const Piece& p, std::vector<Piece>& out) {
      split_by(p, char_matches(p.text, pred_, runs_), behavior_, false, out);
    });
  }

 private:
  Pred pred_;
  bool runs_;
  Behavior behavior_;
};
template <class Pred>
std::unique_ptr<PreTokenizer> char_class(Pred pred, bool runs, Behavior behavior) {
  return std::make_unique<CharClassPre<Pred>>(pred, runs, behavior);
}

// HF's Punctuation and BertPreTokenizer test: ASCII punctuation (which includes symbols such as
// $ + < = > ^ ` | ~) or a P category of the unicode_categories crate.
bool is_punctuation(char32_t c) {
  if (c < 0x80) return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  return (unicode::category(c) & unicode::kLegacyPunctuation) != 0;
}

Prepend parse_prepend(const json& j, std::string_view where) {
  if (j.contains("prepend_scheme")) {
    const std::string s = j["prepend_scheme"].get<std::string>();
    if (s == "always") return Prepend::kAlways;
    if (s == "first") return Prepend::kFirst;
    if (s == "never") return Prepend::kNever;
    fail_unsupported(where, concat("Metaspace prepend_scheme '", s, "'"));
  }
  // Older files: add_prefix_space true/false.
  return j.value("add_prefix_space", true) ? Prepend::kAlways : Prepend::kNever;
}

}  // namespace

const std::string& byte_to_unicode(unsigned char b) { return byte_map().to_str[b]; }
std::optional<unsigned char> unicode_to_byte(char32_t c) {
  if (c >= 512 || byte_map().from_cp[c] < 0) return std::nullopt;
  return static_cast<unsigned char>(byte_map().from_cp[c]);
}

std::string metaspace_replacement(const json& j, std::string_view where) {
  const std::string r = j.value("replacement", std::string("\xE2\x96\x81"));
  if (r.empty()) fail_unsupported(where, "empty Metaspace replacement");
  return r;
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, std::string_view where) {
  if (j.is_null()) return nullptr;
  const std::string type = require(j, "type", where).get<std::string>();
  const std::string here = concat(where, " ", type);
  if (type == "ByteLevel") return std::make_unique<ByteLevelPre>(j.value("add_prefix_space", true), j.value("use_regex", true));
  if (type == "Metaspace")
    return std::make_unique<MetaspacePre>(metaspace_replacement(j, here), parse_prepend(j, here), j.value("split", true));
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const json& s : require(j, "pretokenizers", here))
      if (auto p = make_pre_tokenizer(s, concat(where, "[", steps.size(), "]"))) steps.push_back(std::move(p));
    return std::make_unique<SequencePre>(std::move(steps));
  }
  if (type == "Split") {
    const json& pat = require(j, "pattern", here);
    const Behavior behavior = parse_behavior(require(j, "behavior", here), here);
    const bool invert = j.value("invert", false);
    if (pat.contains("Regex")) {
      const std::string re = pat["Regex"].get<std::string>();
      const auto p = recognize_pattern(re);
      if (!p) fail_unsupported(here, concat("regex pattern '", re, "' (only the GPT-2, Llama 3 and Qwen2 patterns)"));
      return std::make_unique<SplitPre>(p, "", behavior, invert);
    }
    return std::make_unique<SplitPre>(std::nullopt, pattern_string(pat, here), behavior, invert);
  }
  if (type == "Digits") {
    return char_class([](char32_t c) { return unicode::is_number(c); }, !j.value("individual_digits", false),
                      Behavior::kIsolated);
  }
  if (type == "Punctuation") {
    const Behavior b = j.contains("behavior") ? parse_behavior(j["behavior"], here) : Behavior::kIsolated;
    return char_class(is_punctuation, false, b);
  }
  if (type == "BertPreTokenizer") {
    // Words split at (and without) whitespace, then every punctuation character on its own.
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    steps.push_back(char_class(unicode::is_whitespace, false, Behavior::kRemoved));
    steps.push_back(char_class(is_punctuation, false, Behavior::kIsolated));
    return std::make_unique<SequencePre>(std::move(steps));
  }
  if (type == "WhitespaceSplit") return char_class([](char32_t c) { return unicode::is_whitespace(c); }, true, Behavior::kRemoved);
  if (type == "Whitespace") return std::make_unique<SplitPre>(Pattern::kWhitespaceWords, "", Behavior::kRemoved, true);
  fail_unsupported(where, concat("pre_tokenizer type '", type, "'"));
}

}  // namespace fk::tokenizer
