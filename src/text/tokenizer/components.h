// The pipeline stages of a tokenizer.json, as the loader builds them. Each stage is built from
// its JSON object by a make_* function that throws fk::Error for unknown or malformed ones.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace fk::tokenizer {

using json = nlohmann::json;

// A stretch of text on its way through pre-tokenization. `at_origin`: it starts at offset 0 of
// the input (Metaspace's prepend_scheme "first" only prepends there).
struct Piece {
  std::string text;
  bool at_origin = false;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string text) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces the pieces by their splits; empty pieces are dropped (HF drops them too).
  virtual void split(std::vector<Piece>& pieces) const = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one pre-tokenized word.
  virtual void tokenize(std::string_view word, std::vector<int64_t>& ids) const = 0;
  virtual std::optional<int64_t> token_to_id(std::string_view token) const = 0;
  virtual const std::string* id_to_token(int64_t id) const = 0;
  virtual int64_t size() const = 0;  // one past the largest id
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// Why the file is rejected, with where it is ("tokenizer.json: pre_tokenizer: ...").
[[noreturn]] void fail_unsupported(std::string_view where, std::string_view what);
const json& require(const json& j, const char* key, std::string_view where);
std::string pattern_string(const json& pattern, std::string_view where);  // {"String": s} only
std::string metaspace_replacement(const json& j, std::string_view where);

std::unique_ptr<Normalizer> make_normalizer(const json& j, std::string_view where);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& j, std::string_view where);
std::unique_ptr<Model> make_model(const json& j, std::string_view where);
std::unique_ptr<Decoder> make_decoder(const json& j, std::string_view where);

// Splits `text` into pieces by the matches of a hand-written pattern (see split_patterns.cpp):
// returns the [begin, end) byte ranges of the matches, in order.
using MatchRanges = std::vector<std::pair<size_t, size_t>>;
enum class Pattern { kGpt2, kLlama3, kQwen2, kWhitespaceWords };
std::optional<Pattern> recognize_pattern(std::string_view regex);
MatchRanges find_matches(Pattern p, std::string_view text);

// The GPT-2 byte <-> printable character map of ByteLevel.
const std::string& byte_to_unicode(unsigned char b);  // UTF-8 of the mapped char
std::optional<unsigned char> unicode_to_byte(char32_t c);

}  // namespace fk::tokenizer
