// The sampling fields of a completions or chat body beyond the basic ones: vLLM's logits
// processors (presence / frequency / repetition penalties, logit_bias, bad_words), and the
// fields this server does not implement, which are refused with a 400 naming them rather
// than ignored.
#pragma once
#include <nlohmann/json.hpp>

#include "serving/generate/request.h"
#include "text/tokenizer.h"

namespace fk::serve {

// Reads presence_penalty and frequency_penalty ([-2, 2]), repetition_penalty (> 0),
// logit_bias (an object of token id strings to numbers, clamped to [-100, 100] as vLLM
// does; ids are checked against the vocabulary at submission) and bad_words (non-empty
// strings, each encoded with and without a leading space as vLLM does; needs a tokenizer)
// into `params`. Throws ApiError (400) naming the field.
void parse_logits_processor_fields(const nlohmann::json& body, engine::SamplingParams& params,
                                   const tokenizer::Tokenizer* tokenizer);

// Throws ApiError (400) naming logit_bias or bad_words when one of their token ids lies
// outside the vocabulary [0, vocab_size).
void check_token_ids(const engine::SamplingParams& params, int64_t vocab_size);

// Throws ApiError (400) naming the first field given with a value this server would ignore:
// best_of other than 1, suffix, use_beam_search, length_penalty other than 1,
// prompt_logprobs, allowed_token_ids, guided decoding and structured outputs,
// response_format other than text, truncate_prompt_tokens, include_stop_str_in_output.
void refuse_unimplemented_fields(const nlohmann::json& body);

}  // namespace fk::serve
