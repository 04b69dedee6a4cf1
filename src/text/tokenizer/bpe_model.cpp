// BPE model: a word starts as one symbol per character (or its <0xXX> bytes, or <unk>) and
// the lowest-ranked adjacent pair is merged, leftmost first, until no merge applies; this
// matches HF's priority-queue merge order.
#include <queue>

#include "fk/status.h"
#include "text/tokenizer/components.h"
#include "text/tokenizer/unicode.h"

namespace fk::tokenizer {
namespace {

class BpeModel final : public Model {
 public:
  BpeModel(const json& j, std::string_view where) {
    for (const auto& [tok, id] : require(j, "vocab", where).items()) add_vocab(tok, id.get<int64_t>());
    const json& merges = require(j, "merges", where);
    FK_CHECK(merges.is_array(), where, ": merges must be a list");
    int64_t rank = 0;
    for (const json& m : merges) {
      std::string a, b;
      if (m.is_string()) {  // "a b"
        const std::string s = m.get<std::string>();
        const size_t sp = s.find(' ');
        FK_CHECK(sp != std::string::npos && s.find(' ', sp + 1) == std::string::npos, where, ": merge '", s,
                 "' is not two tokens");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else {  // ["a", "b"]
        FK_CHECK(m.is_array() && m.size() == 2, where, ": merge ", m.dump(), " is not a pair");
        a = m[0].get<std::string>();
        b = m[1].get<std::string>();
      }
      const auto ia = vocab_.find(a), ib = vocab_.find(b), inew = vocab_.find(a + b);
      FK_CHECK(ia != vocab_.end() && ib != vocab_.end() && inew != vocab_.end(), where, ": merge '", a, " ", b,
               "' uses a token missing from the vocab");
      merges_.emplace(key(ia->second, ib->second), std::pair{rank++, inew->second});
    }
    auto opt_str = [&](const char* k) {
      return (j.contains(k) && !j[k].is_null()) ? std::optional(j[k].get<std::string>()) : std::nullopt;
    };
    if (auto unk = opt_str("unk_token")) {
      const auto it = vocab_.find(*unk);
      FK_CHECK(it != vocab_.end(), where, ": unk_token '", *unk, "' is not in the vocab");
      unk_id_ = it->second;
    }
    prefix_ = opt_str("continuing_subword_prefix").value_or("");
    suffix_ = opt_str("end_of_word_suffix").value_or("");
    fuse_unk_ = j.value("fuse_unk", false);
    byte_fallback_ = j.value("byte_fallback", false);
    ignore_merges_ = j.value("ignore_merges", false);
    if (j.contains("dropout") && !j["dropout"].is_null() && j["dropout"].get<double>() > 0)
      fail_unsupported(where, "BPE dropout");
    if (byte_fallback_)
      for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", b);
        const auto it = vocab_.find(name);
        byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
      }
  }

  void tokenize(std::string_view word, std::vector<int64_t>& ids) const override {
    if (word.empty()) return;
    if (ignore_merges_) {
      if (auto it = vocab_.find(std::string(word)); it != vocab_.end()) {
        ids.push_back(it->second);
        return;
      }
    }
    std::vector<Symbol> syms = initial_symbols(word);
    merge(syms);
    for (const Symbol& s : syms)
      if (s.alive) ids.push_back(s.id);
  }

  std::optional<int64_t> token_to_id(std::string_view t) const override {
    const auto it = vocab_.find(std::string(t));
    return it == vocab_.end() ? std::nullopt : std::optional(it->second);
  }
  const std::string* id_to_token(int64_t id) const override {
    return (id >= 0 && id < static_cast<int64_t>(vocab_r_.size()) && vocab_r_[id]) ? vocab_r_[id] : nullptr;
  }
  int64_t size() const override { return static_cast<int64_t>(vocab_r_.size()); }

 private:
  struct Symbol {
    int64_t id;
    int prev, next;
    bool alive = true;
  };
  static uint64_t key(int64_t a, int64_t b) { return (static_cast<uint64_t>(a) << 32) ^ static_cast<uint64_t>(b); }

  void add_vocab(const std::string& tok, int64_t id) {
    FK_CHECK(id >= 0 && id < (int64_t{1} << 31), "BPE vocab id ", id, " of '", tok, "' out of range");
    auto [it, fresh] = vocab_.emplace(tok, id);
    if (static_cast<int64_t>(vocab_r_.size()) <= id) vocab_r_.resize(id + 1, nullptr);
    vocab_r_[id] = &it->first;
  }

  std::vector<Symbol> initial_symbols(std::string_view word) const {
    std::vector<int64_t> ids;
    std::optional<int64_t> unk_pending;  // HF keeps one pending <unk> (fused or not) until a known char
    const size_t n = word.size();
    for (size_t i = 0; i < n;) {
      const size_t len = std::min<size_t>(unicode::utf8_length(static_cast<unsigned char>(word[i])), n - i);
      std::string s(word.substr(i, len));
      if (i > 0) s = prefix_ + s;
      if (i + len == n) s += suffix_;
      i += len;
      if (auto it = vocab_.find(s); it != vocab_.end()) {
        if (unk_pending) ids.push_back(*unk_pending), unk_pending.reset();
        ids.push_back(it->second);
        continue;
      }
      if (byte_fallback_) {
        bool all = true;
        for (char ch : s) all = all && byte_ids_[static_cast<unsigned char>(ch)] >= 0;
        if (all) {
          for (char ch : s) ids.push_back(byte_ids_[static_cast<unsigned char>(ch)]);
          continue;
        }
      }
      if (unk_id_) {
        if (unk_pending && !fuse_unk_) ids.push_back(*unk_pending);
        unk_pending = *unk_id_;
      }
    }
    if (unk_pending) ids.push_back(*unk_pending);
    std::vector<Symbol> syms(ids.size());
    for (size_t k = 0; k < ids.size(); ++k)
      syms[k] = {ids[k], static_cast<int>(k) - 1, k + 1 < ids.size() ? static_cast<int>(k) + 1 : -1};
    return syms;
  }

  void merge(std::vector<Symbol>& syms) const {
    struct Cand {
      int64_t rank;
      int pos;
      int64_t new_id;
      bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> q;
    auto push = [&](int pos) {
      if (pos < 0 || syms[pos].next < 0) return;
      if (auto it = merges_.find(key(syms[pos].id, syms[syms[pos].next].id)); it != merges_.end())
        q.push({it->second.first, pos, it->second.second});
    };
    for (int k = 0; k + 1 < static_cast<int>(syms.size()); ++k) push(k);
    while (!q.empty()) {
      const Cand c = q.top();
      q.pop();
      Symbol& s = syms[c.pos];
      if (!s.alive || s.next < 0) continue;
      // Stale entries: the pair at pos changed since it was queued.
      const auto it = merges_.find(key(s.id, syms[s.next].id));
      if (it == merges_.end() || it->second.second != c.new_id || it->second.first != c.rank) continue;
      Symbol& r = syms[s.next];
      r.alive = false;
      s.id = c.new_id;
      s.next = r.next;
      if (r.next >= 0) syms[r.next].prev = c.pos;
      push(s.prev);
      push(c.pos);
    }
  }

  std::unordered_map<std::string, int64_t> vocab_;
  std::vector<const std::string*> vocab_r_;
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> merges_;  // (a, b) -> (rank, merged id)
  std::optional<int64_t> unk_id_;
  std::string prefix_, suffix_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
  int64_t byte_ids_[256] = {};
};

}  // namespace

std::unique_ptr<Model> make_bpe_model(const json& j, std::string_view where) {
  return std::make_unique<BpeModel>(j, where);
}

}  // namespace fk::tokenizer
