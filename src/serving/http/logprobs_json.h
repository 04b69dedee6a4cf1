// The logprobs objects of OpenAI answers, from the engine's TokenLogprobs (the raw
// distribution of the model: log_softmax of the soft-capped logits, before temperature and
// filters, as vLLM's default). JSON has no infinities: a -inf logprob is sent as -9999.0,
// as vLLM does.
//   completions (legacy): {"tokens": [...], "token_logprobs": [...],
//                          "top_logprobs": [{token: logprob, ...}, ...], "text_offset": [...]}
//                          top_logprobs holds the N most likely tokens plus the sampled one.
//   chat:                 {"content": [{"token", "logprob", "bytes", "top_logprobs": [
//                          {"token", "logprob", "bytes"}, ...]}]} with the N most likely.
// A token's text is the token decoded alone (a piece of a UTF-8 character decodes to
// U+FFFD), or "token_id:N" when the model has no tokenizer.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "serving/generate/request.h"
#include "text/tokenizer.h"

namespace fk::serve {

std::string logprob_token_text(const tokenizer::Tokenizer* tok, int64_t id);

// `text_offset`: where the first token's text starts in the completion's text (in
// characters); advanced past these tokens, so that stream chunks continue it.
nlohmann::json completion_logprobs_json(const std::vector<int64_t>& tokens,
                                        const std::vector<engine::TokenLogprobs>& logprobs,
                                        const tokenizer::Tokenizer* tok, int64_t& text_offset);

nlohmann::json chat_logprobs_json(const std::vector<int64_t>& tokens, const std::vector<engine::TokenLogprobs>& logprobs,
                                  const tokenizer::Tokenizer* tok);

}  // namespace fk::serve
