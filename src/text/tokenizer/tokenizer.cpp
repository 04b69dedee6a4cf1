// Loading a tokenizer.json and running its pipeline: added tokens -> normalizer -> added
// tokens (normalized ones) -> pre-tokenizer -> model -> post-processor; decoding maps ids to
// token strings and runs the decoder chain.
#include "text/tokenizer.h"

#include <fstream>
#include <sstream>

#include "fk/status.h"
#include "text/tokenizer/added_tokens.h"
#include "text/tokenizer/components.h"
#include "text/tokenizer/unicode.h"

namespace fk::tokenizer {

std::unique_ptr<Model> make_bpe_model(const json& j, std::string_view where);
std::unique_ptr<Model> make_unigram_model(const json& j, std::string_view where);
std::unique_ptr<Model> make_wordpiece_model(const json& j, std::string_view where);

void fail_unsupported(std::string_view where, std::string_view what) {
  FK_FAIL(FK_ERR_UNSUPPORTED, where, ": unsupported ", what);
}

const json& require(const json& j, const char* key, std::string_view where) {
  if (!j.is_object() || !j.contains(key)) FK_FAIL(FK_ERR_INVALID_ARGUMENT, where, ": missing \"", key, "\"");
  return j[key];
}

std::string pattern_string(const json& pattern, std::string_view where) {
  if (pattern.is_object() && pattern.contains("String")) return pattern["String"].get<std::string>();
  if (pattern.is_object() && pattern.contains("Regex"))
    fail_unsupported(where, concat("regex pattern '", pattern["Regex"].get<std::string>(), "'"));
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, where, ": malformed pattern ", pattern.dump());
}

std::unique_ptr<Model> make_model(const json& j, std::string_view where) {
  // Files without "type" (older HF versions) are BPE when they have merges, WordPiece when they
  // have its max_input_chars_per_word.
  std::string type = j.is_object() && j.contains("type") ? j["type"].get<std::string>() : "";
  if (type.empty() && j.is_object() && j.contains("merges")) type = "BPE";
  if (type.empty() && j.is_object() && j.contains("max_input_chars_per_word")) type = "WordPiece";
  if (type == "BPE") return make_bpe_model(j, concat(where, " BPE"));
  if (type == "Unigram") return make_unigram_model(j, concat(where, " Unigram"));
  if (type == "WordPiece") return make_wordpiece_model(j, concat(where, " WordPiece"));
  fail_unsupported(where, concat("model type '", type, "'"));
}

// What the post-processor adds around a single sequence.
struct PostProcessor {
  std::vector<int64_t> before, after;
  bool templated = false;  // a TemplateProcessing ran (see parse_post)
};

struct TokenizerImpl {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::unique_ptr<Decoder> decoder;
  AddedVocabulary added;
  PostProcessor post;
};

namespace {

// Each processor wraps what the ones before it in a Sequence produced: its tokens go outside.
// HF's TemplateProcessing hands its parts on as separate encodings, which a later processor
// wraps one by one (or panics on), so nothing may add tokens after it.
void parse_post(const json& j, std::string_view where, PostProcessor& post) {
  if (j.is_null()) return;
  const std::string type = require(j, "type", where).get<std::string>();
  const std::string here = concat(where, " ", type);
  if (type == "ByteLevel") return;  // only adjusts offsets
  if (type == "Sequence") {
    for (const json& p : require(j, "processors", here)) parse_post(p, where, post);
    return;
  }
  PostProcessor mine;
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    // cls and sep are [token, id]; a single sequence becomes cls $A sep.
    mine.before.push_back(require(j, "cls", here).at(1).get<int64_t>());
    mine.after.push_back(require(j, "sep", here).at(1).get<int64_t>());
  } else if (type == "TemplateProcessing") {
    const json& specials = require(j, "special_tokens", here);
    bool seen_a = false;
    for (const json& item : require(j, "single", here)) {
      if (item.contains("Sequence")) {
        FK_CHECK(!seen_a, here, ": single template has two sequences");
        seen_a = true;
        continue;
      }
      const std::string name = require(require(item, "SpecialToken", here), "id", here).get<std::string>();
      const json& ids = require(require(specials, name.c_str(), here), "ids", here);
      auto& dst = seen_a ? mine.after : mine.before;
      for (const json& id : ids) dst.push_back(id.get<int64_t>());
    }
    FK_CHECK(seen_a, here, ": single template has no $A");
  } else {
    fail_unsupported(where, concat("post_processor type '", type, "'"));
  }
  if (post.templated && (!mine.before.empty() || !mine.after.empty()))
    fail_unsupported(where, concat(type, " adding tokens after a TemplateProcessing in a Sequence"));
  post.templated = post.templated || type == "TemplateProcessing";
  post.before.insert(post.before.begin(), mine.before.begin(), mine.before.end());
  post.after.insert(post.after.end(), mine.after.begin(), mine.after.end());
}

std::shared_ptr<TokenizerImpl> build(const json& j, const std::string& src) {
  auto t = std::make_shared<TokenizerImpl>();
  FK_CHECK(j.is_object(), src, ": not a JSON object");
  if (j.contains("truncation") && !j["truncation"].is_null())
    fail_unsupported(src, "truncation (set it to null)");
  t->model = make_model(require(j, "model", src), concat(src, ": model"));
  t->normalizer = make_normalizer(j.value("normalizer", json()), concat(src, ": normalizer"));
  t->pre_tokenizer = make_pre_tokenizer(j.value("pre_tokenizer", json()), concat(src, ": pre_tokenizer"));
  t->decoder = make_decoder(j.value("decoder", json()), concat(src, ": decoder"));
  parse_post(j.value("post_processor", json()), concat(src, ": post_processor"), t->post);
  if (j.contains("added_tokens") && !j["added_tokens"].is_null()) {
    for (const json& a : j["added_tokens"]) {
      const std::string where = concat(src, ": added_tokens");
      AddedToken tok{require(a, "id", where).get<int64_t>(), require(a, "content", where).get<std::string>()};
      tok.single_word = a.value("single_word", false);
      tok.lstrip = a.value("lstrip", false);
      tok.rstrip = a.value("rstrip", false);
      tok.special = a.value("special", false);
      tok.normalized = a.value("normalized", !tok.special);
      t->added.add(std::move(tok));
    }
  }
  return t;
}

}  // namespace

Tokenizer Tokenizer::from_json(std::string_view text, std::string_view source) {
  const std::string src(source);
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, src, ": malformed JSON: ", e.what());
  }
  try {
    return Tokenizer(build(j, src));
  } catch (const json::exception& e) {  // a field of the wrong JSON type
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, src, ": malformed tokenizer: ", e.what());
  }
}

Tokenizer Tokenizer::from_file(const std::filesystem::path& path) {
  std::filesystem::path p = path;
  if (std::filesystem::is_directory(p)) p /= "tokenizer.json";
  std::ifstream in(p, std::ios::binary);
  if (!in) FK_FAIL(FK_ERR_INVALID_ARGUMENT, "cannot open tokenizer file ", p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return from_json(ss.str(), p.string());
}

std::vector<int64_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const TokenizerImpl& t = *impl_;
  FK_CHECK(unicode::is_valid_utf8(text), "text to encode is not valid UTF-8");
  std::vector<int64_t> ids;
  if (add_special_tokens) ids = t.post.before;
  for (const Segment& raw : t.added.split(text, /*normalized=*/false)) {
    if (raw.id >= 0) {
      ids.push_back(raw.id);
      continue;
    }
    std::string norm(text.substr(raw.begin, raw.end - raw.begin));
    if (t.normalizer) norm = t.normalizer->normalize(std::move(norm));
    for (const Segment& seg : t.added.split(norm, /*normalized=*/true)) {
      if (seg.id >= 0) {
        ids.push_back(seg.id);
        continue;
      }
      std::vector<Piece> pieces{{norm.substr(seg.begin, seg.end - seg.begin), raw.begin == 0 && seg.begin == 0}};
      if (t.pre_tokenizer) t.pre_tokenizer->split(pieces);
      for (const Piece& p : pieces) t.model->tokenize(p.text, ids);
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), t.post.after.begin(), t.post.after.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const int64_t> ids, bool skip_special_tokens) const {
  const TokenizerImpl& t = *impl_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    if (const AddedToken* a = t.added.by_id(id)) {
      if (!(skip_special_tokens && a->special)) tokens.push_back(a->content);
    } else if (const std::string* s = t.model->id_to_token(id)) {
      tokens.push_back(*s);
    }
  }
  if (!t.decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return unicode::from_utf8_lossy(out);
  }
  t.decoder->decode_chain(tokens);
  std::string out;
  for (const auto& s : tokens) out += s;
  return out;
}

int64_t Tokenizer::vocab_size() const { return std::max(impl_->model->size(), impl_->added.max_id() + 1); }

std::optional<int64_t> Tokenizer::token_to_id(std::string_view token) const {
  if (const AddedToken* a = impl_->added.by_content(token)) return a->id;
  return impl_->model->token_to_id(token);
}

std::string Tokenizer::id_to_token(int64_t id) const {
  if (const AddedToken* a = impl_->added.by_id(id)) return a->content;
  const std::string* s = impl_->model->id_to_token(id);
  return s ? *s : std::string();
}

bool Tokenizer::is_special(int64_t id) const {
  const AddedToken* a = impl_->added.by_id(id);
  return a && a->special;
}

IncrementalDecoder::IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tok_(&tokenizer), skip_special_(skip_special_tokens) {}

std::string IncrementalDecoder::add(int64_t id) {
  ids_.push_back(id);
  // ByteFallback decodes a run of <0xXX> tokens as a whole (one U+FFFD per byte when the run is
  // not valid UTF-8, even bytes that were valid so far): wait for the run to end.
  const std::string piece = tok_->id_to_token(id);
  if (piece.size() == 6 && piece.starts_with("<0x") && piece.back() == '>') return {};
  const std::string text = tok_->decode(ids_, skip_special_);
  // Hold back while the text ends in U+FFFD (an unfinished byte sequence) or the text so far
  // would change (decoders that look at neighbours); only whole code points go out.
  if (text.size() <= emitted_ || text.ends_with("\xEF\xBF\xBD") || text.compare(0, emitted_, emitted_text_) != 0)
    return {};
  std::string fresh = text.substr(emitted_);
  emitted_text_ = text;
  emitted_ = text.size();
  return fresh;
}

std::string IncrementalDecoder::flush() {
  const std::string text = tok_->decode(ids_, skip_special_);
  std::string rest = text.size() > emitted_ && text.compare(0, emitted_, emitted_text_) == 0
                         ? text.substr(emitted_)
                         : std::string();
  ids_.clear();
  emitted_ = 0;
  emitted_text_.clear();
  return rest;
}

}  // namespace fk::tokenizer
