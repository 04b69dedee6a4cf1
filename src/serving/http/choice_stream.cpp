#include "serving/http/choice_stream.h"

#include <algorithm>

namespace fk::serve {

ChoiceStream::ChoiceStream(int64_t index, std::string id, int64_t prompt_tokens, std::shared_ptr<TokenStream> stream,
                           const tokenizer::Tokenizer* tok, std::vector<std::string> stop)
    : index_(index), id_(std::move(id)), prompt_tokens_(prompt_tokens), stream_(std::move(stream)),
      stop_(std::move(stop)) {
  if (tok) decoder_ = std::make_unique<tokenizer::IncrementalDecoder>(*tok, /*skip_special_tokens=*/true);
  for (const std::string& s : stop_) holdback_ = std::max(holdback_, s.size() - 1);
}

bool ChoiceStream::advance(std::vector<int64_t>& fresh, std::chrono::steady_clock::time_point t0) {
  fresh.clear();
  fresh_logprobs_.clear();
  const bool more = stream_->wait_next(fresh, &fresh_logprobs_);
  if (!fresh.empty() && first_token_s_ < 0)
    first_token_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (stopped_) {  // tokens the engine made before the abort took effect: not part of the answer
    fresh.clear();
    fresh_logprobs_.clear();
    return more;
  }
  for (size_t i = 0; i < fresh.size(); ++i) {
    tokens_.push_back(fresh[i]);
    if (!decoder_) continue;
    const size_t scan_from = text_.size() > holdback_ ? text_.size() - holdback_ : 0;
    text_ += decoder_->add(fresh[i]);
    size_t first = std::string::npos;  // the earliest of the stop strings
    for (const std::string& s : stop_) first = std::min(first, text_.find(s, scan_from));
    if (first != std::string::npos) {
      text_.resize(first);
      stopped_ = true;
    }
    if (stopped_) {
      fresh.resize(i + 1);
      break;
    }
  }
  if (fresh_logprobs_.size() > fresh.size()) fresh_logprobs_.resize(fresh.size());  // cut at a stop string
  logprobs_.insert(logprobs_.end(), fresh_logprobs_.begin(), fresh_logprobs_.end());
  if (!more && decoder_ && !stopped_) text_ += decoder_->flush();
  return more;
}

std::string ChoiceStream::sendable(bool finished) {
  size_t end = text_.size();
  if (!finished && !stopped_) {
    end = end > holdback_ ? end - holdback_ : 0;
    // Never split a UTF-8 sequence: back up to the start of a character.
    while (end > sent_ && end < text_.size() && (static_cast<unsigned char>(text_[end]) & 0xC0) == 0x80) --end;
  }
  if (end <= sent_) return {};
  std::string out = text_.substr(sent_, end - sent_);
  sent_ = end;
  return out;
}

engine::FinishReason ChoiceStream::finish_reason() const {
  return stopped_ ? engine::FinishReason::stop : stream_->finish_reason();
}

}  // namespace fk::serve
