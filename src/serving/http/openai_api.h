// The OpenAI completions API as fk serve speaks it: request parsing with OpenAI-style
// errors (type, message, param, HTTP status), and response / stream-chunk bodies.
// Prompts are text (a string or a list of strings) when the model has a tokenizer, or token
// ids (a list of ints, or a list of such lists) always.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "serving/generate/request.h"
#include "serving/generate/request_images.h"
#include "text/tokenizer.h"

namespace fk::serve {

// An error a client caused (or overload): becomes the HTTP status and an OpenAI error body.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string type, const std::string& message, std::string param = {})
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)) {}
  int status;
  std::string type;   // "invalid_request_error", "not_found_error", "server_error", ...
  std::string param;  // the offending field, when there is one
};
// A 400 invalid_request_error naming the offending field.
[[noreturn]] inline void invalid_request(const std::string& param, const std::string& message) {
  throw ApiError(400, "invalid_request_error", message, param);
}
nlohmann::json error_body(const ApiError& e);
// JSON text for an HTTP body: bytes that are not UTF-8 (a client's echoed in a message, a
// token's partial character) become U+FFFD instead of failing the answer.
std::string json_text(const nlohmann::json& j);

struct CompletionRequest {
  std::vector<std::vector<int64_t>> prompts;
  int64_t n = 1;
  bool max_tokens_given = false;  // max_tokens or max_completion_tokens was in the body
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::vector<std::string> stop;  // stop strings (need a tokenizer): the text ends before them
  engine::SamplingParams params;  // params.logprobs: completions' `logprobs`, chat's `top_logprobs`
  // A chat's images (image_parts.h), placed in prompts[0]; each sequence gets its own copy.
  std::shared_ptr<const engine::RequestImages> images;
};

// `served_model`: the name the server answers to (a request naming another model is a 404).
// `tokenizer`: the model's, or null (then only token-id prompts and no stop strings).
CompletionRequest parse_completion_request(const std::string& body, const std::string& served_model,
                                           const tokenizer::Tokenizer* tokenizer = nullptr);

// The parts of a request body every endpoint checks the same way.
nlohmann::json parse_body(const std::string& text);
void check_model(const nlohmann::json& body, const std::string& served_model);
// Fills sampling parameters, n, stream and stop from a completions or chat body (not logprobs),
// with the logits processors' fields, and refuses fields this server would ignore
// (sampling_fields.h).
void parse_sampling(const nlohmann::json& body, CompletionRequest& r, const tokenizer::Tokenizer* tokenizer);
// Logprobs: completions take `logprobs` (an integer in [0, 20]: that many alternatives);
// chat takes `logprobs` (a boolean) and `top_logprobs` (an integer in [0, 20], needs logprobs).
void parse_completion_logprobs(const nlohmann::json& body, CompletionRequest& r);
void parse_chat_logprobs(const nlohmann::json& body, CompletionRequest& r);

// What the server can hold: requests beyond these can never run, whatever the load, and
// are the client's error (400), never "retry later".
struct ServerLimits {
  int64_t max_model_len = 0;       // prompt + completion tokens of one sequence
  int64_t kv_capacity_tokens = 0;  // K/V the whole cache holds (0: unknown, not checked)
  int64_t max_sequences = 0;       // sequences (prompts x n) in the server at once
};
// The max_tokens of one prompt's sequences: the request's own, or, when it named none, the
// default cut to the context left after the prompt (and to what the KV cache holds, when
// kv_capacity_tokens > 0).
int64_t max_tokens_for(const CompletionRequest& r, int64_t prompt_tokens, int64_t max_model_len,
                       int64_t kv_capacity_tokens = 0);
// Throws a 400 naming the limit a request can never fit: more sequences than the server
// holds, a prompt plus max_tokens beyond the model's context (vLLM's message), or a sequence
// needing more K/V than the whole cache.
void check_limits(const CompletionRequest& r, const ServerLimits& limits);

struct ChoiceResult {
  int64_t index = 0;
  std::vector<int64_t> tokens;
  std::string text;
  engine::FinishReason finish_reason = engine::FinishReason::none;
  nlohmann::json logprobs;  // the choice's logprobs object (logprobs_json.h), null when not asked for
};
nlohmann::json usage_json(int64_t prompt_tokens, int64_t completion_tokens);
nlohmann::json completion_response(const std::string& id, const std::string& model, int64_t created,
                                   const std::vector<ChoiceResult>& choices, int64_t prompt_tokens);
// One server-sent event's JSON: new tokens of one choice, and its finish reason once finished.
nlohmann::json completion_chunk(const std::string& id, const std::string& model, int64_t created, int64_t index,
                                const std::vector<int64_t>& tokens, const std::string& text,
                                engine::FinishReason finish, const nlohmann::json& logprobs = nullptr);

// Chat: the messages rendered by the model's chat template (tokenizer_config.json) into a
// prompt, encoded without adding special tokens again (the template writes them).
// `image_encoder`: the model's (image_url parts, image_parts.h), or null for a text model.
// What a chat request's image parts may use: the model's image encoder (null: the model
// reads no images) and the folder local image files may come from (empty: none, only data
// URLs; `fk serve --allowed-local-media-path`).
struct ChatImages {
  const engine::ImageEncoder* encoder = nullptr;
  std::filesystem::path allowed_local_media;
};

CompletionRequest parse_chat_request(const std::string& body, const std::string& served_model,
                                     const tokenizer::Tokenizer* tokenizer, const nlohmann::ordered_json* tokenizer_config,
                                     const ChatImages& chat_images = {});

// The prompt ids of a chat body's `messages` (with add_generation_prompt, default true),
// rendered by the chat template of `tokenizer_config`. `text` is the body as received (its
// key order is kept for the template), `body` the same parsed. Throws ApiError (400).
// Image parts are placed for a model whose image encoder reads them (their images into
// `images`, when given).
std::vector<int64_t> encode_chat(const std::string& text, const nlohmann::json& body,
                                 const tokenizer::Tokenizer* tokenizer, const nlohmann::ordered_json& tokenizer_config,
                                 const ChatImages& chat_images = {},
                                 std::shared_ptr<const engine::RequestImages>* images = nullptr);

nlohmann::json chat_response(const std::string& id, const std::string& model, int64_t created,
                             const std::vector<ChoiceResult>& choices, int64_t prompt_tokens);
// A chat stream chunk: `first` adds the assistant role to the delta.
nlohmann::json chat_chunk(const std::string& id, const std::string& model, int64_t created, int64_t index,
                          const std::string& text, bool first, engine::FinishReason finish,
                          const nlohmann::json& logprobs = nullptr);

}  // namespace fk::serve
