// Normalizers: text rewrites applied before pre-tokenization.
#include "fk/status.h"
#include "text/tokenizer/components.h"
#include "text/tokenizer/unicode.h"

namespace fk::tokenizer {
namespace {

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  if (from.empty()) return text;
  std::string out;
  size_t pos = 0;
  for (size_t hit = text.find(from); hit != std::string::npos; hit = text.find(from, pos)) {
    out.append(text, pos, hit - pos);
    out += to;
    pos = hit + from.size();
  }
  out.append(text, pos);
  return out;
}

class SequenceNorm final : public Normalizer {
 public:
  explicit SequenceNorm(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  std::string normalize(std::string text) const override {
    for (const auto& s : steps_) text = s->normalize(std::move(text));
    return text;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

class PrependNorm final : public Normalizer {
 public:
  explicit PrependNorm(std::string p) : p_(std::move(p)) {}
  std::string normalize(std::string text) const override { return text.empty() ? text : p_ + text; }

 private:
  std::string p_;
};

class ReplaceNorm final : public Normalizer {
 public:
  ReplaceNorm(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  std::string normalize(std::string text) const override { return replace_all(std::move(text), from_, to_); }

 private:
  std::string from_, to_;
};

class NfcNorm final : public Normalizer {
 public:
  std::string normalize(std::string text) const override { return unicode::nfc(text); }
};

std::u32string to_u32(const std::string& text, const char* what) {
  std::u32string s;
  std::vector<size_t> off;
  unicode::decode_utf8(text, s, off, what);
  return s;
}

std::string to_utf8(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) unicode::append_utf8(out, c);
  return out;
}

std::u32string to_lower(const std::u32string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (char32_t c : s) unicode::append_lowercase(out, c);
  return out;
}

class LowercaseNorm final : public Normalizer {
 public:
  std::string normalize(std::string text) const override {
    return to_utf8(to_lower(to_u32(text, "text to lowercase")));
  }
};

// BERT's basic cleanup, in HF's order: clean_text, CJK spacing, accent stripping, lowercasing.
class BertNorm final : public Normalizer {
 public:
  BertNorm(bool clean_text, bool chinese_chars, bool strip_accents, bool lowercase)
      : clean_text_(clean_text), chinese_chars_(chinese_chars), strip_accents_(strip_accents), lowercase_(lowercase) {}

  std::string normalize(std::string text) const override {
    std::u32string s = to_u32(text, "text to normalize");
    if (clean_text_) s = clean(s);
    if (chinese_chars_) s = space_chinese(s);
    if (strip_accents_) {
      s = unicode::nfd(s);
      std::erase_if(s, [](char32_t c) { return (unicode::category(c) & unicode::kLegacyNonspacingMark) != 0; });
    }
    if (lowercase_) s = to_lower(s);
    return to_utf8(s);
  }

 private:
  // Drops NUL, U+FFFD and controls (Cc/Cf/Co, but \t \n \r count as whitespace); every
  // whitespace becomes ' '.
  static std::u32string clean(const std::u32string& s) {
    std::u32string out;
    out.reserve(s.size());
    for (char32_t c : s) {
      const bool tab_or_newline = c == '\t' || c == '\n' || c == '\r';
      if (c == 0 || c == 0xFFFD || (!tab_or_newline && (unicode::category(c) & unicode::kLegacyOther))) continue;
      out.push_back(tab_or_newline || unicode::is_whitespace(c) ? U' ' : c);
    }
    return out;
  }

  // The CJK ideograph blocks of HF's is_chinese_char. HF starts Extension E at U+2B920 where
  // Google's BERT has U+2B820; HF's value is kept, so U+2B820..U+2B91F get no spaces.
  static bool is_chinese(char32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
  }

  static std::u32string space_chinese(const std::u32string& s) {
    std::u32string out;
    out.reserve(s.size());
    for (char32_t c : s) {
      if (is_chinese(c)) {
        out += U' ';
        out += c;
        out += U' ';
      } else {
        out += c;
      }
    }
    return out;
  }

  bool clean_text_, chinese_chars_, strip_accents_, lowercase_;
};

class StripNorm final : public Normalizer {
 public:
  StripNorm(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string text) const override {
    std::u32string s;
    std::vector<size_t> off;
    unicode::decode_utf8(text, s, off, "text to strip");
    size_t b = 0, e = s.size();
    if (left_) while (b < e && unicode::is_whitespace(s[b])) ++b;
    if (right_) while (e > b && unicode::is_whitespace(s[e - 1])) --e;
    return text.substr(off[b], off[e] - off[b]);
  }

 private:
  bool left_, right_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const json& j, std::string_view where) {
  if (j.is_null()) return nullptr;
  const std::string type = require(j, "type", where).get<std::string>();
  const std::string here = concat(where, " ", type);
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const json& s : require(j, "normalizers", here))
      if (auto n = make_normalizer(s, concat(where, "[", steps.size(), "]"))) steps.push_back(std::move(n));
    return std::make_unique<SequenceNorm>(std::move(steps));
  }
  if (type == "Prepend") return std::make_unique<PrependNorm>(require(j, "prepend", here).get<std::string>());
  if (type == "Replace")
    return std::make_unique<ReplaceNorm>(pattern_string(require(j, "pattern", here), here),
                                         require(j, "content", here).get<std::string>());
  if (type == "NFC") return std::make_unique<NfcNorm>();
  if (type == "Lowercase") return std::make_unique<LowercaseNorm>();
  if (type == "BertNormalizer") {
    auto flag = [&](const char* key) {
      const json& v = require(j, key, here);
      FK_CHECK(v.is_boolean(), here, ": \"", key, "\" must be true or false");
      return v.get<bool>();
    };
    const bool lowercase = flag("lowercase");
    // strip_accents null (or absent) follows lowercase, as in BERT's uncased models.
    const json accents = j.value("strip_accents", json());
    FK_CHECK(accents.is_null() || accents.is_boolean(), here, ": \"strip_accents\" must be true, false or null");
    return std::make_unique<BertNorm>(flag("clean_text"), flag("handle_chinese_chars"),
                                      accents.is_null() ? lowercase : accents.get<bool>(), lowercase);
  }
  if (type == "Strip") return std::make_unique<StripNorm>(j.value("strip_left", true), j.value("strip_right", true));
  fail_unsupported(where, concat("normalizer type '", type, "'"));
}

}  // namespace fk::tokenizer
