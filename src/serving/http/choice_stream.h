// One (prompt, sample) pair of a completion request as the HTTP side follows it: its tokens
// as they arrive, their text (incremental detokenization), stop strings (the text ends
// before the first one; the engine request is aborted there), the part of the text a stream
// may send so far (a possible stop-string prefix is held back), and its timing.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "serving/generate/request.h"
#include "text/tokenizer.h"
#include "serving/http/engine_loop.h"

namespace fk::serve {

class ChoiceStream {
 public:
  ChoiceStream(int64_t index, std::string id, int64_t prompt_tokens, std::shared_ptr<TokenStream> stream,
               const tokenizer::Tokenizer* tok, std::vector<std::string> stop);

  // Waits for the next tokens; false once the request has finished. New tokens and the
  // newly sendable text are returned through `tokens` / `text`. `on_stop` runs once when a
  // stop string ends the text (the caller aborts the engine request).
  template <class OnStop>
  bool next(std::vector<int64_t>& tokens, std::string& text, std::chrono::steady_clock::time_point t0, OnStop on_stop);

  // Waits at most `timeout` for the next tokens: true when next() would not block.
  bool wait_ready(std::chrono::milliseconds timeout) const { return stream_->wait_ready(timeout); }

  int64_t index() const { return index_; }
  const std::string& id() const { return id_; }
  int64_t prompt_tokens() const { return prompt_tokens_; }
  const std::vector<int64_t>& tokens() const { return tokens_; }
  const std::string& text() const { return text_; }
  // Beside tokens() when the request asked for logprobs (else empty); fresh_logprobs():
  // those of the tokens the last next() returned.
  const std::vector<engine::TokenLogprobs>& logprobs() const { return logprobs_; }
  const std::vector<engine::TokenLogprobs>& fresh_logprobs() const { return fresh_logprobs_; }
  engine::FinishReason finish_reason() const;
  std::string error() const { return stream_->error(); }
  double first_token_s() const { return first_token_s_; }

 private:
  bool advance(std::vector<int64_t>& fresh, std::chrono::steady_clock::time_point t0);  // tokens and text
  std::string sendable(bool finished);  // text not yet handed out that cannot be part of a stop string

  int64_t index_;
  std::string id_;
  int64_t prompt_tokens_;
  std::shared_ptr<TokenStream> stream_;
  std::unique_ptr<tokenizer::IncrementalDecoder> decoder_;
  std::vector<std::string> stop_;
  size_t holdback_ = 0;
  std::vector<int64_t> tokens_;
  std::vector<engine::TokenLogprobs> logprobs_, fresh_logprobs_;
  std::string text_;
  size_t sent_ = 0;
  bool stopped_ = false;
  double first_token_s_ = -1;
};

template <class OnStop>
bool ChoiceStream::next(std::vector<int64_t>& tokens, std::string& text, std::chrono::steady_clock::time_point t0,
                        OnStop on_stop) {
  const bool was_stopped = stopped_;
  const bool more = advance(tokens, t0);
  if (stopped_ && !was_stopped) on_stop();
  text = sendable(!more);
  return more;
}

}  // namespace fk::serve
