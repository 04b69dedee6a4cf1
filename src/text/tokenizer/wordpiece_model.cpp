// WordPiece model (BERT): a word is cut greedily from the left into the longest vocab pieces,
// every piece after the first spelled with the continuing-subword prefix ("##"). A word with
// a stretch no piece covers, or longer than max_input_chars_per_word characters, becomes one
// unk token as a whole.
#include "fk/status.h"
#include "text/tokenizer/components.h"
#include "text/tokenizer/unicode.h"

namespace fk::tokenizer {
namespace {

class WordPieceModel final : public Model {
 public:
  WordPieceModel(const json& j, std::string_view where) : where_(where) {
    // HF requires all four fields (only "type" may be missing, in older files).
    const json& vocab = require(j, "vocab", where);
    FK_CHECK(vocab.is_object(), where, ": vocab must be a map of token to id");
    for (const auto& [tok, id_json] : vocab.items()) {
      const int64_t id = id_json.get<int64_t>();
      FK_CHECK(id >= 0 && id < (int64_t{1} << 31), where, ": vocab id ", id, " of '", tok, "' out of range");
      const auto [it, fresh] = vocab_.emplace(tok, id);
      if (static_cast<int64_t>(tokens_.size()) <= id) tokens_.resize(id + 1, nullptr);
      tokens_[id] = &it->first;
    }
    unk_ = require(j, "unk_token", where).get<std::string>();
    prefix_ = require(j, "continuing_subword_prefix", where).get<std::string>();
    const json& max_chars = require(j, "max_input_chars_per_word", where);
    FK_CHECK(max_chars.is_number_unsigned(), where, ": max_input_chars_per_word must be a count");
    max_chars_ = max_chars.get<size_t>();
  }

  void tokenize(std::string_view word, std::vector<int64_t>& ids) const override {
    if (word.empty()) return;
    std::u32string cps;
    std::vector<size_t> off;  // byte offset of each character: pieces end only there
    unicode::decode_utf8(word, cps, off, "word");
    if (cps.size() > max_chars_) {
      ids.push_back(unk_id());
      return;
    }
    const size_t first = ids.size();
    std::string piece;
    for (size_t start = 0; start < cps.size();) {
      // The longest piece from `start`, shrinking by one character at a time.
      size_t end = cps.size();
      for (; end > start; --end) {
        piece.assign(start > 0 ? prefix_ : std::string());
        piece.append(word.substr(off[start], off[end] - off[start]));
        if (const auto it = vocab_.find(piece); it != vocab_.end()) {
          ids.push_back(it->second);
          break;
        }
      }
      if (end == start) {  // nothing matches here: the whole word is unknown
        ids.resize(first);
        ids.push_back(unk_id());
        return;
      }
      start = end;
    }
  }

  std::optional<int64_t> token_to_id(std::string_view t) const override {
    const auto it = vocab_.find(std::string(t));
    return it == vocab_.end() ? std::nullopt : std::optional(it->second);
  }

  const std::string* id_to_token(int64_t id) const override {
    return id >= 0 && id < static_cast<int64_t>(tokens_.size()) ? tokens_[id] : nullptr;
  }

  int64_t size() const override { return static_cast<int64_t>(tokens_.size()); }

 private:
  // HF reports a missing unk token only when a word needs it, so such a file still loads.
  int64_t unk_id() const {
    const auto it = vocab_.find(unk_);
    if (it == vocab_.end()) FK_FAIL(FK_ERR_INVALID_ARGUMENT, where_, ": unk_token '", unk_, "' is not in the vocab");
    return it->second;
  }

  std::string where_;
  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<const std::string*> tokens_;  // by id; null in gaps
  std::string unk_, prefix_;
  size_t max_chars_ = 100;
};

}  // namespace

std::unique_ptr<Model> make_wordpiece_model(const json& j, std::string_view where) {
  return std::make_unique<WordPieceModel>(j, where);
}

}  // namespace fk::tokenizer
