// Hugging Face tokenizer.json tokenizers in C++ (no Python at run time).
//
// Supported (anything else throws fk::Error naming the component type):
//   models          BPE (merges as "a b" or [a, b], byte_fallback, unk/fuse_unk, ignore_merges,
//                   continuing_subword_prefix, end_of_word_suffix), Unigram (Viterbi, byte_fallback, unk),
//                   WordPiece (greedy longest match, ## prefix, max_input_chars_per_word)
//   normalizers     Sequence, Prepend, Replace (string pattern), NFC, Lowercase (Unicode), Strip,
//                   BertNormalizer
//   pre_tokenizers  ByteLevel, Split (string patterns; the GPT-2, Llama 3 and Qwen2 regexes),
//                   Metaspace, Sequence, Digits, Punctuation, Whitespace, WhitespaceSplit, BertPreTokenizer
//   decoders        ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace (string), WordPiece, Sequence
//   post_processor  TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel, Sequence
//   added tokens    matched before the model, longest first, with lstrip/rstrip/single_word/
//                   normalized/special as HF does.
// Encoding equals HF `tokenizers`; the tests compare against goldens made with it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fk::tokenizer {

struct TokenizerImpl;

class Tokenizer {
 public:
  // A tokenizer.json file, or a folder holding one.
  static Tokenizer from_file(const std::filesystem::path& path);
  // `source` names the text in error messages.
  static Tokenizer from_json(std::string_view json_text, std::string_view source = "tokenizer.json");

  // Text must be valid UTF-8. add_special_tokens applies the post-processor (BOS/EOS...).
  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // Unknown ids are skipped, as HF does. Always returns valid UTF-8.
  std::string decode(std::span<const int64_t> ids, bool skip_special_tokens = false) const;

  // One past the largest id of the model vocab and the added tokens.
  int64_t vocab_size() const;
  std::optional<int64_t> token_to_id(std::string_view token) const;
  // The token's vocab string ("" for an unknown id).
  std::string id_to_token(int64_t id) const;
  bool is_special(int64_t id) const;

  const TokenizerImpl& impl() const { return *impl_; }

 private:
  explicit Tokenizer(std::shared_ptr<const TokenizerImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const TokenizerImpl> impl_;
};

// Streaming decode: feed ids one at a time and get the newly completed text. Chunks never end
// inside a UTF-8 sequence (an incomplete byte sequence is held back until it completes or
// flush()), and the chunks joined equal Tokenizer::decode of all ids. Each step decodes all ids
// since the start (or the last flush), which keeps that equality exact for every decoder but
// costs O(n) per step (a windowed variant is future work). Runs of <0xXX> byte tokens are held
// until a non-byte token or flush(), because ByteFallback decodes such a run as a whole.
class IncrementalDecoder {
 public:
  explicit IncrementalDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);
  std::string add(int64_t id);
  // Whatever is still held back (possibly ending in U+FFFD); then starts over.
  std::string flush();

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::vector<int64_t> ids_;  // since the start or the last flush
  std::string emitted_text_;  // what add() has returned so far
  size_t emitted_ = 0;
};

}  // namespace fk::tokenizer
