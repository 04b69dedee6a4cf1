#include "serving/http/openai_api.h"

#include <algorithm>
#include <cmath>

#include "serving/http/chat_messages.h"
#include "serving/http/image_parts.h"
#include "serving/http/sampling_fields.h"
#include "text/chat_template.h"
#include "text/tokenizer/unicode.h"
#include "fk/ops/logprobs.h"
#include "core/error_words.h"
#include "fk/status.h"

namespace fk::serve {

using nlohmann::json;

namespace {

const char* type_name(const json& v) { return v.type_name(); }

int64_t get_int(const json& body, const char* key, int64_t fallback, int64_t lo, int64_t hi) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) invalid_request(key, concat("'", key, "' must be an integer, got ", type_name(*it)));
  const int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) invalid_request(key, concat("'", key, "' must be in [", lo, ", ", hi, "], got ", v));
  return v;
}

double get_number(const json& body, const char* key, double fallback, double lo, double hi) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_number()) invalid_request(key, concat("'", key, "' must be a number, got ", type_name(*it)));
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) invalid_request(key, concat("'", key, "' must be in [", lo, ", ", hi, "], got ", v));
  return v;
}

bool get_bool(const json& body, const char* key, bool fallback) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) invalid_request(key, concat("'", key, "' must be a boolean, got ", type_name(*it)));
  return it->get<bool>();
}

std::vector<int64_t> token_list(const json& v, const char* param) {
  std::vector<int64_t> ids;
  for (const json& t : v) {
    if (!t.is_number_integer()) invalid_request(param, concat("'", param, "' token ids must be integers, got ", type_name(t)));
    ids.push_back(t.get<int64_t>());
  }
  return ids;
}

// Where `s` stops being valid UTF-8 (s.size() when it is valid throughout).
size_t first_invalid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const int len = tokenizer::unicode::utf8_length(static_cast<unsigned char>(s[i]));
    if (i + static_cast<size_t>(len) > s.size() ||
        !tokenizer::unicode::is_valid_utf8(std::string_view(s).substr(i, static_cast<size_t>(len))))
      return i;
    i += static_cast<size_t>(len);
  }
  return s.size();
}

}  // namespace

json error_body(const ApiError& e) {
  // The words alone: a library error's condition and source line are the server's business.
  json err = {{"message", error_words(e.what())}, {"type", e.type}, {"code", e.status}};
  err["param"] = e.param.empty() ? json(nullptr) : json(e.param);
  return {{"error", err}};
}

std::string json_text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json parse_body(const std::string& text) {
  if (!tokenizer::unicode::is_valid_utf8(text))
    invalid_request("", concat("the request body is not valid UTF-8 (first bad byte at offset ", first_invalid_utf8(text),
                   "); JSON text must be UTF-8"));
  json body;
  try {
    body = json::parse(text);
  } catch (const json::parse_error& e) {
    invalid_request("", concat("the request body is not valid JSON: ", e.what()));
  }
  if (!body.is_object()) invalid_request("", concat("the request body must be a JSON object, got ", type_name(body)));
  return body;
}

void check_model(const json& body, const std::string& served_model) {
  if (auto m = body.find("model"); m != body.end() && !m->is_null()) {
    if (!m->is_string()) invalid_request("model", "'model' must be a string");
    if (m->get<std::string>() != served_model)
      throw ApiError(404, "not_found_error",
                     concat("the model '", m->get<std::string>(), "' does not exist; this server serves '",
                            served_model, "'"),
                     "model");
  }
}

void parse_sampling(const json& body, CompletionRequest& r, const tokenizer::Tokenizer* tok) {
  r.n = get_int(body, "n", 1, 1, 16);
  r.stream = get_bool(body, "stream", false);
  if (auto so = body.find("stream_options"); so != body.end() && so->is_object())
    r.include_usage = get_bool(*so, "include_usage", false);
  engine::SamplingParams& sp = r.params;
  // max_completion_tokens (OpenAI's newer name) wins over max_tokens; with neither, the
  // default the caller set (16 for completions; chat runs to the context's end).
  const int64_t max_tokens = get_int(body, "max_tokens", sp.max_tokens, 1, int64_t{1} << 30);
  sp.max_tokens = get_int(body, "max_completion_tokens", max_tokens, 1, int64_t{1} << 30);
  for (const char* key : {"max_tokens", "max_completion_tokens"})
    if (auto it = body.find(key); it != body.end() && !it->is_null()) r.max_tokens_given = true;
  sp.min_tokens = get_int(body, "min_tokens", 0, 0, sp.max_tokens);
  sp.temperature = static_cast<float>(get_number(body, "temperature", 1.0, 0.0, 100.0));
  sp.top_p = static_cast<float>(get_number(body, "top_p", 1.0, 0.0, 1.0));
  if (sp.top_p <= 0) invalid_request("top_p", "'top_p' must be in (0, 1]");
  const int64_t top_k = get_int(body, "top_k", 0, -1, int64_t{1} << 31);
  sp.top_k = top_k < 0 ? 0 : static_cast<int32_t>(top_k);  // -1 means off, as in vLLM
  sp.min_p = static_cast<float>(get_number(body, "min_p", 0.0, 0.0, 1.0));
  sp.ignore_eos = get_bool(body, "ignore_eos", false);
  if (auto s = body.find("seed"); s != body.end() && !s->is_null()) {
    if (!s->is_number_integer()) invalid_request("seed", "'seed' must be an integer");
    sp.seed = static_cast<uint64_t>(s->get<int64_t>());
  }
  if (auto st = body.find("stop_token_ids"); st != body.end() && !st->is_null()) {
    if (!st->is_array()) invalid_request("stop_token_ids", "'stop_token_ids' must be a list of integers");
    sp.stop_token_ids = token_list(*st, "stop_token_ids");
  }
  if (auto st = body.find("stop"); st != body.end() && !st->is_null()) {
    if (st->is_string()) {
      r.stop.push_back(st->get<std::string>());
    } else if (st->is_array()) {
      for (const json& x : *st) {
        if (!x.is_string()) invalid_request("stop", "'stop' must be a string or a list of strings");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      invalid_request("stop", "'stop' must be a string or a list of strings");
    }
    if (r.stop.size() > 4) invalid_request("stop", "'stop' takes at most 4 strings");
    for (const std::string& x : r.stop)
      if (x.empty()) invalid_request("stop", "'stop' strings must not be empty");
    if (!r.stop.empty() && tok == nullptr)
      invalid_request("stop", "'stop' strings need the model's tokenizer (none was found with the model); use stop_token_ids");
  }
  if (get_bool(body, "echo", false)) invalid_request("echo", "'echo' is not supported");
  refuse_unimplemented_fields(body);
  parse_logits_processor_fields(body, sp, tok);
  try {
    sp.validate();
  } catch (const Error& e) {
    invalid_request("", e.what());
  }
}

void parse_completion_logprobs(const json& body, CompletionRequest& r) {
  const auto lp = body.find("logprobs");
  if (lp == body.end() || lp->is_null()) return;
  r.params.logprobs = static_cast<int32_t>(get_int(body, "logprobs", 0, 0, ops::kMaxTopLogprobs));
}

void parse_chat_logprobs(const json& body, CompletionRequest& r) {
  const bool wanted = get_bool(body, "logprobs", false);
  const int64_t top = get_int(body, "top_logprobs", 0, 0, ops::kMaxTopLogprobs);
  if (top > 0 && !wanted) invalid_request("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  if (wanted) r.params.logprobs = static_cast<int32_t>(top);
}

CompletionRequest parse_completion_request(const std::string& text, const std::string& served_model,
                                           const tokenizer::Tokenizer* tok) {
  const json body = parse_body(text);
  check_model(body, served_model);
  CompletionRequest r;
  auto p = body.find("prompt");
  if (p == body.end() || p->is_null()) invalid_request("prompt", "'prompt' is required");
  auto encode = [&](const json& s) {
    if (tok == nullptr)
      invalid_request("prompt", "text prompts need the model's tokenizer (none was found with the model): send token ids "
                    "(a list of integers, or a list of such lists)");
    try {
      return tok->encode(s.get<std::string>(), /*add_special_tokens=*/true);
    } catch (const Error& e) {
      invalid_request("prompt", e.what());
    }
  };
  if (p->is_string()) {
    r.prompts.push_back(encode(*p));
  } else if (!p->is_array() || p->empty()) {
    invalid_request("prompt", "'prompt' must be a string, a list of strings, or token ids");
  } else if ((*p)[0].is_string()) {
    for (const json& one : *p) {
      if (!one.is_string()) invalid_request("prompt", "a batch of prompts must be all strings or all token-id lists");
      r.prompts.push_back(encode(one));
    }
  } else if ((*p)[0].is_array()) {
    for (const json& one : *p) {
      if (!one.is_array() || one.empty()) invalid_request("prompt", "every prompt of a batch must be a non-empty list of token ids");
      r.prompts.push_back(token_list(one, "prompt"));
    }
  } else {
    r.prompts.push_back(token_list(*p, "prompt"));
  }
  for (const auto& pr : r.prompts)
    if (pr.empty()) invalid_request("prompt", "a prompt encodes to no tokens");
  parse_completion_logprobs(body, r);
  parse_sampling(body, r, tok);
  return r;
}

int64_t max_tokens_for(const CompletionRequest& r, int64_t prompt_tokens, int64_t max_model_len,
                       int64_t kv_capacity_tokens) {
  if (r.max_tokens_given) return r.params.max_tokens;
  int64_t k = r.params.max_tokens;
  if (max_model_len > 0) k = std::min(k, max_model_len - prompt_tokens);
  // A sequence holds K/V for all its tokens but the last sampled one.
  if (kv_capacity_tokens > 0) k = std::min(k, kv_capacity_tokens - prompt_tokens + 1);
  return std::max<int64_t>(1, k);
}

void check_limits(const CompletionRequest& r, const ServerLimits& limits) {
  const int64_t sequences = static_cast<int64_t>(r.prompts.size()) * r.n;
  if (limits.max_sequences > 0 && sequences > limits.max_sequences)
    invalid_request("n", concat("this request asks for ", sequences, " sequences (", r.prompts.size(), " prompts x n = ", r.n,
                    "); this server holds at most ", limits.max_sequences, " at once (--max-pending)"));
  for (const auto& prompt : r.prompts) {
    const int64_t p = static_cast<int64_t>(prompt.size());
    const int64_t k = max_tokens_for(r, p, limits.max_model_len, limits.kv_capacity_tokens);
    if (limits.max_model_len > 0 && p + k > limits.max_model_len) {
      if (r.max_tokens_given)
        invalid_request("max_tokens", concat("This model's maximum context length is ", limits.max_model_len,
                                 " tokens. However, you requested ", p + k, " tokens (", p, " in the messages, ", k,
                                 " in the completion). Please reduce the length of the messages or completion."));
      invalid_request("prompt", concat("This model's maximum context length is ", limits.max_model_len,
                           " tokens. However, your prompt has ", p,
                           " tokens, which leaves no room for the completion. Please reduce the length of the messages."));
    }
    // A sequence holds K/V for all its tokens but the last sampled one.
    const int64_t kv = p + k - 1;
    if (limits.kv_capacity_tokens > 0 && kv > limits.kv_capacity_tokens)
      invalid_request("", concat("this request needs K/V for ", kv, " tokens (", p, " in the prompt + ", k,
                     " in the completion - 1), more than this server's whole KV cache holds (",
                     limits.kv_capacity_tokens, " tokens); lower max_tokens or shorten the prompt"));
  }
}

json usage_json(int64_t prompt_tokens, int64_t completion_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens}};
}

namespace {

// A whole response: one entry per choice made by `choice_json`, plus usage.
template <class ChoiceJson>
json response_json(const char* object, const std::string& id, const std::string& model, int64_t created,
                   const std::vector<ChoiceResult>& choices, int64_t prompt_tokens, ChoiceJson choice_json) {
  json out = {{"id", id}, {"object", object}, {"created", created}, {"model", model}};
  json arr = json::array();
  int64_t completion_tokens = 0;
  for (const ChoiceResult& c : choices) {
    json one = choice_json(c);
    one["index"] = c.index;
    one["logprobs"] = c.logprobs;
    one["finish_reason"] = engine::finish_reason_name(c.finish_reason);
    arr.push_back(std::move(one));
    completion_tokens += static_cast<int64_t>(c.tokens.size());
  }
  out["choices"] = arr;
  out["usage"] = usage_json(prompt_tokens, completion_tokens);
  return out;
}

// A stream chunk of one choice; the finish reason is null until the choice finished.
json chunk_json(const char* object, const std::string& id, const std::string& model, int64_t created, int64_t index,
                json choice, engine::FinishReason finish, const json& logprobs) {
  choice["index"] = index;
  choice["logprobs"] = logprobs;
  choice["finish_reason"] =
      finish == engine::FinishReason::none ? json(nullptr) : json(engine::finish_reason_name(finish));
  return {{"id", id}, {"object", object}, {"created", created}, {"model", model}, {"choices", json::array({choice})}};
}

}  // namespace

json completion_response(const std::string& id, const std::string& model, int64_t created,
                         const std::vector<ChoiceResult>& choices, int64_t prompt_tokens) {
  return response_json("text_completion", id, model, created, choices, prompt_tokens, [](const ChoiceResult& c) {
    return json{{"text", c.text}, {"token_ids", c.tokens}};
  });
}

json completion_chunk(const std::string& id, const std::string& model, int64_t created, int64_t index,
                      const std::vector<int64_t>& tokens, const std::string& text, engine::FinishReason finish,
                      const json& logprobs) {
  return chunk_json("text_completion", id, model, created, index, {{"text", text}, {"token_ids", tokens}}, finish,
                    logprobs);
}

CompletionRequest parse_chat_request(const std::string& text, const std::string& served_model,
                                     const tokenizer::Tokenizer* tok, const nlohmann::ordered_json* tokenizer_config,
                                     const ChatImages& chat_images) {
  const json body = parse_body(text);
  check_model(body, served_model);
  if (tok == nullptr || tokenizer_config == nullptr || !tokenizer_config->contains("chat_template"))
    throw ApiError(400, "invalid_request_error",
                   "chat completions need the model's tokenizer.json and a chat_template in its tokenizer_config.json; "
                   "this model has none: use /v1/completions");
  CompletionRequest r;
  r.prompts.push_back(encode_chat(text, body, tok, *tokenizer_config, chat_images, &r.images));
  parse_chat_logprobs(body, r);
  // As in vLLM, a chat request that names no max_tokens runs to its end (EOS, a stop) or
  // the context's; max_tokens_for cuts this to the room the prompt leaves.
  r.params.max_tokens = int64_t{1} << 30;
  parse_sampling(body, r, tok);
  return r;
}

std::vector<int64_t> encode_chat(const std::string& text, const json& body, const tokenizer::Tokenizer* tok,
                                 const nlohmann::ordered_json& tokenizer_config, const ChatImages& chat_images,
                                 std::shared_ptr<const engine::RequestImages>* images) {
  // Key order matters to templates (tojson of tool arguments): read the messages ordered.
  const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(text);
  const auto m = ordered.find("messages");
  if (m == ordered.end() || !m->is_array() || m->empty()) invalid_request("messages", "'messages' must be a non-empty list");
  const bool add_generation_prompt = get_bool(body, "add_generation_prompt", true);
  std::string prompt;
  const auto* vision = dynamic_cast<const models::vlm::Qwen3VLImageEncoder*>(chat_images.encoder);
  std::vector<models::vlm::ProcessedImage> processed;
  const nlohmann::ordered_json with_placeholders = take_image_parts(*m, vision, chat_images.allowed_local_media, *tok, processed);
  try {
    const nlohmann::ordered_json messages =
        chat_messages_for_template(with_placeholders, chat::chat_template_takes_content_parts(tokenizer_config));
    prompt = chat::apply_chat_template(tokenizer_config, messages, add_generation_prompt);
  } catch (const Error& e) {
    invalid_request("messages", concat("the chat template refused the messages: ", e.what()));
  }
  std::vector<int64_t> ids = tok->encode(prompt, /*add_special_tokens=*/false);
  if (ids.empty()) invalid_request("messages", "the rendered conversation encodes to no tokens");
  std::shared_ptr<const engine::RequestImages> placed = place_images(ids, processed, vision);
  if (images != nullptr) *images = std::move(placed);
  return ids;
}

json chat_response(const std::string& id, const std::string& model, int64_t created,
                   const std::vector<ChoiceResult>& choices, int64_t prompt_tokens) {
  return response_json("chat.completion", id, model, created, choices, prompt_tokens, [](const ChoiceResult& c) {
    return json{{"message", {{"role", "assistant"}, {"content", c.text}}}};
  });
}

json chat_chunk(const std::string& id, const std::string& model, int64_t created, int64_t index,
                const std::string& text, bool first, engine::FinishReason finish, const json& logprobs) {
  json delta = {{"content", text}};
  if (first) delta["role"] = "assistant";
  return chunk_json("chat.completion.chunk", id, model, created, index, {{"delta", delta}}, finish, logprobs);
}

}  // namespace fk::serve
