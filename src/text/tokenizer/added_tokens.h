// Added (and special) tokens: found in the text before the model runs, so they are never split.
#pragma once
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/tokenizer/components.h"

namespace fk::tokenizer {

struct AddedToken {
  int64_t id;
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = false, special = false;
};

// A stretch of text: either an added token (id >= 0) or text for the model (id < 0), with its
// byte range in the text that was split.
struct Segment {
  int64_t id;
  size_t begin, end;
};

class AddedVocabulary {
 public:
  void add(AddedToken t);
  // Splits by the tokens whose `normalized` flag equals `normalized` (non-normalized ones are
  // looked for in the raw text, the others in the normalized text): leftmost, then longest
  // match; single_word/lstrip/rstrip applied as HF does.
  std::vector<Segment> split(std::string_view text, bool normalized) const;
  const AddedToken* by_id(int64_t id) const;
  const AddedToken* by_content(std::string_view content) const;
  int64_t max_id() const { return max_id_; }

 private:
  std::vector<AddedToken> tokens_;
  std::unordered_map<int64_t, size_t> by_id_;
  std::unordered_map<std::string, size_t> by_content_;
  size_t max_len_ = 0;
  int64_t max_id_ = -1;
};

}  // namespace fk::tokenizer
