// Decoders: turn the token strings of decoded ids back into text, as a chain over the list of
// token strings (each HF decoder maps Vec<String> -> Vec<String>; the result is concatenated).
#include "fk/status.h"
#include "text/tokenizer/components.h"
#include "text/tokenizer/unicode.h"

namespace fk::tokenizer {
namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

class ByteLevelDec final : public Decoder {
 public:
  // All tokens' bytes joined, then one lossy UTF-8 conversion; a token with a character outside
  // the byte map contributes its own UTF-8 bytes (added tokens).
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    std::u32string cps;
    std::vector<size_t> off;
    for (const std::string& t : tokens) {
      unicode::decode_utf8(t, cps, off, "token");
      std::string mine;
      bool all = true;
      for (char32_t c : cps) {
        const auto b = unicode_to_byte(c);
        if (!b) { all = false; break; }
        mine.push_back(static_cast<char>(*b));
      }
      bytes += all ? mine : t;
    }
    tokens.assign(1, unicode::from_utf8_lossy(bytes));
  }
};

class MetaspaceDec final : public Decoder {
 public:
  MetaspaceDec(std::string rep, bool prepend) : rep_(std::move(rep)), prepend_(prepend) {}
  // Every replacement char becomes a space, except in the first token (all of its are dropped)
  // when a prefix was prepended at encoding.
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t pos = 0; pos < t.size();) {
        if (t.compare(pos, rep_.size(), rep_) == 0) {
          if (!(i == 0 && prepend_)) out += ' ';
          pos += rep_.size();
        } else {
          out += t[pos++];
        }
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  std::string rep_;
  bool prepend_;
};

class ByteFallbackDec final : public Decoder {
 public:
  // Runs of <0xXX> tokens become their bytes when those form valid UTF-8, else one U+FFFD per byte.
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty()) return;
      if (unicode::is_valid_utf8(pending))
        out.push_back(pending);
      else
        for (size_t k = 0; k < pending.size(); ++k) out.emplace_back(kReplacementChar);
      pending.clear();
    };
    for (std::string& t : tokens) {
      if (auto b = byte_token(t)) {
        pending.push_back(static_cast<char>(*b));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }

 private:
  static std::optional<unsigned char> byte_token(const std::string& t) {
    if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return std::nullopt;
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    const int hi = hex(t[3]), lo = hex(t[4]);
    if (hi < 0 || lo < 0) return std::nullopt;
    return static_cast<unsigned char>(hi * 16 + lo);
  }
};

class FuseDec final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class StripDec final : public Decoder {
 public:
  StripDec(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  // Removes up to `start` leading and `stop` trailing `content` chars of every token.
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      std::u32string cps;
      std::vector<size_t> off;
      unicode::decode_utf8(t, cps, off, "token");
      size_t b = 0, e = cps.size();
      while (b < start_ && b < e && cps[b] == content_) ++b;
      for (size_t k = 0; k < stop_ && e > b && cps[e - 1] == content_; ++k) --e;
      t = t.substr(off[b], off[e] - off[b]);
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class ReplaceDec final : public Decoder {
 public:
  ReplaceDec(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      std::string out;
      size_t pos = 0;
      for (size_t hit = t.find(from_); hit != std::string::npos && !from_.empty(); hit = t.find(from_, pos)) {
        out.append(t, pos, hit - pos);
        out += to_;
        pos = hit + from_.size();
      }
      out.append(t, pos);
      t = std::move(out);
    }
  }

 private:
  std::string from_, to_;
};

// Every non-overlapping occurrence of `from` (not empty), left to right.
std::string replaced(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit = text.find(from); hit != std::string_view::npos; hit = text.find(from, pos)) {
    out.append(text, pos, hit - pos);
    out += to;
    pos = hit + from.size();
  }
  out.append(text, pos);
  return out;
}

class WordPieceDec final : public Decoder {
 public:
  WordPieceDec(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  // A token with the prefix continues the previous word; any other starts a new one after a
  // space. The first token is kept whole, prefix and all, as HF does.
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i > 0) t = t.starts_with(prefix_) ? t.substr(prefix_.size()) : " " + t;
      if (cleanup_) t = cleanup(t);
    }
  }

 private:
  // HF's cleanup of tokenization spaces, in its order. It sees one token at a time, so only
  // the space the decoder itself added before a token can go.
  static std::string cleanup(std::string t) {
    static constexpr std::pair<std::string_view, std::string_view> kRules[] = {
        {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kRules) t = replaced(t, from, to);
    return t;
  }

  std::string prefix_;
  bool cleanup_;
};

class SequenceDec final : public Decoder {
 public:
  explicit SequenceDec(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& s : steps_) s->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const json& j, std::string_view where) {
  if (j.is_null()) return nullptr;
  const std::string type = require(j, "type", where).get<std::string>();
  const std::string here = concat(where, " ", type);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDec>();
  if (type == "Metaspace") {
    bool prepend = j.value("add_prefix_space", true);
    if (j.contains("prepend_scheme")) prepend = j["prepend_scheme"].get<std::string>() != "never";
    return std::make_unique<MetaspaceDec>(metaspace_replacement(j, here), prepend);
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDec>();
  if (type == "Fuse") return std::make_unique<FuseDec>();
  if (type == "Strip") {
    const std::string c = require(j, "content", here).get<std::string>();
    std::u32string cps;
    std::vector<size_t> off;
    unicode::decode_utf8(c, cps, off, "Strip content");
    FK_CHECK(cps.size() == 1, here, ": content must be one character");
    return std::make_unique<StripDec>(cps[0], j.value("start", size_t{0}), j.value("stop", size_t{0}));
  }
  if (type == "Replace")
    return std::make_unique<ReplaceDec>(pattern_string(require(j, "pattern", here), here),
                                        require(j, "content", here).get<std::string>());
  if (type == "WordPiece") {
    const json& cleanup = require(j, "cleanup", here);
    FK_CHECK(cleanup.is_boolean(), here, ": \"cleanup\" must be true or false");
    return std::make_unique<WordPieceDec>(require(j, "prefix", here).get<std::string>(), cleanup.get<bool>());
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> steps;
    for (const json& s : require(j, "decoders", here))
      if (auto d = make_decoder(s, concat(where, "[", steps.size(), "]"))) steps.push_back(std::move(d));
    return std::make_unique<SequenceDec>(std::move(steps));
  }
  fail_unsupported(where, concat("decoder type '", type, "'"));
}

}  // namespace fk::tokenizer
