// The OpenAI completions API as fk serve speaks it: request parsing with OpenAI-style
// errors (type, message, param, HTTP status), and response / stream-chunk bodies.
// Prompts are token ids (a list of ints, or a list of such lists): text prompts, `stop`
// strings and chat messages need the model's tokenizer, which the server does not load yet.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/request.h"

namespace fk::serve {

// An error a client caused (or overload): becomes the HTTP status and an OpenAI error body.
struct ApiError : std::runtime_error {
  ApiError(int status, std::string type, const std::string& message, std::string param = {})
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)) {}
  int status;
  std::string type;   // "invalid_request_error", "not_found_error", "server_error", ...
  std::string param;  // the offending field, when there is one
};
nlohmann::json error_body(const ApiError& e);

struct CompletionRequest {
  std::vector<std::vector<int64_t>> prompts;
  int64_t n = 1;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  engine::SamplingParams params;
};

// `served_model`: the name the server answers to (a request naming another model is a 404).
CompletionRequest parse_completion_request(const std::string& body, const std::string& served_model);

struct ChoiceResult {
  int64_t index = 0;
  std::vector<int64_t> tokens;
  engine::FinishReason finish_reason = engine::FinishReason::none;
};
nlohmann::json completion_response(const std::string& id, const std::string& model, int64_t created,
                                   const std::vector<ChoiceResult>& choices, int64_t prompt_tokens);
// One server-sent event's JSON: new tokens of one choice, and its finish reason once finished.
nlohmann::json completion_chunk(const std::string& id, const std::string& model, int64_t created, int64_t index,
                                const std::vector<int64_t>& tokens, engine::FinishReason finish);

}  // namespace fk::serve
