// Unigram model: the segmentation with the highest total log-probability (Viterbi over every
// vocab piece that matches at each position). Characters no piece covers become <unk>
// (scored min_score - 10, consecutive ones fused) and then, with byte_fallback, <0xXX> pieces.
#include <cmath>

#include "fk/status.h"
#include "text/tokenizer/components.h"
#include "text/tokenizer/unicode.h"

namespace fk::tokenizer {
namespace {

class UnigramModel final : public Model {
 public:
  UnigramModel(const json& j, std::string_view where) {
    const json& vocab = require(j, "vocab", where);
    FK_CHECK(vocab.is_array(), where, ": Unigram vocab must be a list of [piece, score]");
    min_score_ = INFINITY;
    for (const json& e : vocab) {
      FK_CHECK(e.is_array() && e.size() == 2, where, ": Unigram vocab entry ", e.dump(), " is not [piece, score]");
      pieces_.push_back(e[0].get<std::string>());
      scores_.push_back(e[1].get<double>());
      min_score_ = std::min(min_score_, scores_.back());
      ids_.emplace(pieces_.back(), static_cast<int64_t>(pieces_.size()) - 1);
      max_piece_bytes_ = std::max(max_piece_bytes_, pieces_.back().size());
    }
    if (j.contains("unk_id") && !j["unk_id"].is_null()) {
      unk_id_ = j["unk_id"].get<int64_t>();
      FK_CHECK(*unk_id_ >= 0 && *unk_id_ < static_cast<int64_t>(pieces_.size()), where, ": unk_id out of range");
    }
    byte_fallback_ = j.value("byte_fallback", false);
  }

  void tokenize(std::string_view word, std::vector<int64_t>& ids) const override {
    if (word.empty()) return;
    const size_t n = word.size();
    struct Best {
      double score = 0;
      int64_t id = -1;
      size_t start = 0;
      bool set = false;
    };
    std::vector<Best> best(n + 1);
    best[0].set = true;
    const double unk_score = min_score_ - 10.0;
    for (size_t i = 0; i < n;) {
      const size_t clen = std::min<size_t>(unicode::utf8_length(static_cast<unsigned char>(word[i])), n - i);
      if (!best[i].set) { i += clen; continue; }
      bool single = false;
      // Every piece starting here: try each character boundary up to the longest piece.
      for (size_t e = i + clen; e <= n && e - i <= max_piece_bytes_;) {
        if (auto it = ids_.find(std::string(word.substr(i, e - i))); it != ids_.end()) {
          const double s = best[i].score + scores_[it->second];
          if (!best[e].set || s > best[e].score) best[e] = {s, it->second, i, true};
          if (e == i + clen) single = true;
        }
        if (e == n) break;
        e += std::min<size_t>(unicode::utf8_length(static_cast<unsigned char>(word[e])), n - e);
      }
      if (!single && unk_id_) {
        const double s = best[i].score + unk_score;
        if (!best[i + clen].set || s > best[i + clen].score) best[i + clen] = {s, *unk_id_, i, true};
      }
      i += clen;
    }
    FK_CHECK(best[n].set, "Unigram: no segmentation of '", std::string(word), "' (no unk_id)");
    // Backtrack into piece strings; runs of <unk> fuse into one string.
    std::vector<std::string> toks;
    std::string unk_run;
    for (size_t e = n; e > 0;) {
      const Best& b = best[e];
      const std::string s(word.substr(b.start, e - b.start));
      if (unk_id_ && b.id == *unk_id_) {
        unk_run.insert(0, s);
      } else {
        if (!unk_run.empty()) toks.push_back(std::move(unk_run)), unk_run.clear();
        toks.push_back(s);
      }
      e = b.start;
    }
    if (!unk_run.empty()) toks.push_back(std::move(unk_run));
    for (auto it = toks.rbegin(); it != toks.rend(); ++it) emit(*it, ids);
  }

  std::optional<int64_t> token_to_id(std::string_view t) const override {
    const auto it = ids_.find(std::string(t));
    return it == ids_.end() ? std::nullopt : std::optional(it->second);
  }
  const std::string* id_to_token(int64_t id) const override {
    return (id >= 0 && id < static_cast<int64_t>(pieces_.size())) ? &pieces_[id] : nullptr;
  }
  int64_t size() const override { return static_cast<int64_t>(pieces_.size()); }

 private:
  void emit(const std::string& tok, std::vector<int64_t>& ids) const {
    if (auto it = ids_.find(tok); it != ids_.end()) {
      ids.push_back(it->second);
      return;
    }
    if (byte_fallback_) {
      std::vector<int64_t> bytes;
      for (unsigned char ch : tok) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", ch);
        const auto it = ids_.find(name);
        if (it == ids_.end()) break;
        bytes.push_back(it->second);
      }
      if (bytes.size() == tok.size()) {
        ids.insert(ids.end(), bytes.begin(), bytes.end());
        return;
      }
    }
    FK_CHECK(unk_id_.has_value(), "Unigram: '", tok, "' is not in the vocab and there is no unk_id");
    ids.push_back(*unk_id_);
  }

  std::vector<std::string> pieces_;
  std::vector<double> scores_;
  std::unordered_map<std::string, int64_t> ids_;
  size_t max_piece_bytes_ = 0;
  double min_score_ = 0;
  std::optional<int64_t> unk_id_;
  bool byte_fallback_ = false;
};

}  // namespace

std::unique_ptr<Model> make_unigram_model(const json& j, std::string_view where) {
  return std::make_unique<UnigramModel>(j, where);
}

}  // namespace fk::tokenizer
