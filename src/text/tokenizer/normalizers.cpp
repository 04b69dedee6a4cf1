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

// ASCII lowercasing plus Latin-1/Greek/Cyrillic ranges with one-to-one mappings. Characters
// whose lowercase form is not one code point (U+0130) are left alone; documented limitation.
class LowercaseNorm final : public Normalizer {
 public:
  std::string normalize(std::string text) const override {
    std::u32string s;
    std::vector<size_t> off;
    unicode::decode_utf8(text, s, off, "text to lowercase");
    std::string out;
    out.reserve(text.size());
    for (char32_t c : s) unicode::append_utf8(out, lower(c));
    return out;
  }

 private:
  static char32_t lower(char32_t c) {
    if (c >= 'A' && c <= 'Z') return c + 32;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
    if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 && c != 0x17F) {
      const bool even_upper = (c < 0x138) || (c > 0x149 && c < 0x178);
      if (even_upper ? (c % 2 == 0) : (c % 2 == 1 && c != 0x178)) return c + 1;
    }
    return c;
  }
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
  if (type == "Strip") return std::make_unique<StripNorm>(j.value("strip_left", true), j.value("strip_right", true));
  fail_unsupported(where, concat("normalizer type '", type, "'"));
}

}  // namespace fk::tokenizer
