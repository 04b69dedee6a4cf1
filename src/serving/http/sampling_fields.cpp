#include "serving/http/sampling_fields.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "fk/status.h"
#include "serving/http/openai_api.h"

namespace fk::serve {

using nlohmann::json;

namespace {

bool given(const json& body, const char* key) {
  const auto it = body.find(key);
  return it != body.end() && !it->is_null();
}

double number(const json& body, const char* key, double fallback) {
  if (!given(body, key)) return fallback;
  const json& v = body.at(key);
  if (!v.is_number()) invalid_request(key, concat("'", key, "' must be a number, got ", v.type_name()));
  const double x = v.get<double>();
  if (!std::isfinite(x)) invalid_request(key, concat("'", key, "' must be a finite number"));
  return x;
}

// vLLM's bad_words encoding: the word as written (leading spaces removed), and with one
// leading space when that gives a different first token in as many tokens (the form it has
// in the middle of a text).
std::vector<std::vector<int64_t>> encode_bad_word(const std::string& word, const tokenizer::Tokenizer& tok) {
  const std::string bare = word.substr(std::min(word.find_first_not_of(' '), word.size()));
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> plain = tok.encode(bare, /*add_special_tokens=*/false);
  if (plain.empty()) invalid_request("bad_words", concat("the bad word '", word, "' encodes to no tokens"));
  std::vector<int64_t> spaced = tok.encode(" " + bare, /*add_special_tokens=*/false);
  out.push_back(std::move(plain));
  if (!spaced.empty() && spaced[0] != out[0][0] && spaced.size() == out[0].size()) out.push_back(std::move(spaced));
  return out;
}

}  // namespace

void parse_logits_processor_fields(const json& body, engine::SamplingParams& sp, const tokenizer::Tokenizer* tok) {
  sp.presence_penalty = static_cast<float>(number(body, "presence_penalty", 0.0));
  if (sp.presence_penalty < -2 || sp.presence_penalty > 2)
    invalid_request("presence_penalty", concat("'presence_penalty' must be in [-2, 2], got ", sp.presence_penalty));
  sp.frequency_penalty = static_cast<float>(number(body, "frequency_penalty", 0.0));
  if (sp.frequency_penalty < -2 || sp.frequency_penalty > 2)
    invalid_request("frequency_penalty", concat("'frequency_penalty' must be in [-2, 2], got ", sp.frequency_penalty));
  const double rep = number(body, "repetition_penalty", 1.0);
  if (rep <= 0) invalid_request("repetition_penalty", concat("'repetition_penalty' must be greater than zero, got ", rep));
  sp.repetition_penalty = static_cast<float>(rep);

  sp.logit_bias.clear();
  if (given(body, "logit_bias")) {
    const json& lb = body.at("logit_bias");
    if (!lb.is_object()) invalid_request("logit_bias", "'logit_bias' must be an object of token ids to biases");
    for (const auto& [key, value] : lb.items()) {
      int64_t id = 0;
      size_t used = 0;
      try {
        id = std::stoll(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != key.size())
        invalid_request("logit_bias", concat("'logit_bias' key '", key, "' cannot be converted to an integer token id"));
      if (!value.is_number() || !std::isfinite(value.get<double>()))
        invalid_request("logit_bias", concat("'logit_bias' value of token ", key, " must be a finite number"));
      sp.logit_bias.emplace_back(id, static_cast<float>(std::clamp(value.get<double>(), -100.0, 100.0)));
    }
  }

  sp.bad_words.clear();
  if (given(body, "bad_words")) {
    const json& bw = body.at("bad_words");
    if (!bw.is_array()) invalid_request("bad_words", "'bad_words' must be a list of strings");
    std::vector<std::string> words;
    for (const json& w : bw) {
      if (!w.is_string() || w.get<std::string>().empty())
        invalid_request("bad_words", "'bad_words' must be a list of non-empty strings");
      if (std::find(words.begin(), words.end(), w.get<std::string>()) == words.end())
        words.push_back(w.get<std::string>());
    }
    if (!words.empty() && tok == nullptr)
      invalid_request("bad_words", "'bad_words' need the model's tokenizer (none was found with the model)");
    for (const std::string& w : words)
      for (auto& ids : encode_bad_word(w, *tok)) sp.bad_words.push_back(std::move(ids));
  }
}

void check_token_ids(const engine::SamplingParams& sp, int64_t V) {
  for (const auto& [id, b] : sp.logit_bias)
    if (id < 0 || id >= V)
      invalid_request("logit_bias", concat("'logit_bias' token id ", id, " is outside the vocabulary [0, ", V, ")"));
  for (const auto& w : sp.bad_words)
    for (int64_t id : w)
      if (id < 0 || id >= V)
        invalid_request("bad_words", concat("'bad_words' encode to token id ", id, ", outside the model's vocabulary [0, ", V,
                                "); the tokenizer does not match the model"));
}

void refuse_unimplemented_fields(const json& body) {
  auto refuse = [](const char* key, const std::string& why) {
    invalid_request(key, concat("'", key, "' is not supported by this server", why.empty() ? "" : ": ", why));
  };
  if (given(body, "best_of")) {
    const json& v = body.at("best_of");
    if (!v.is_number_integer() || v.get<int64_t>() != 1) refuse("best_of", "only best_of = 1 (the default)");
  }
  if (given(body, "suffix")) {
    const json& v = body.at("suffix");
    if (!v.is_string() || !v.get<std::string>().empty()) refuse("suffix", "");
  }
  if (given(body, "use_beam_search") && body.at("use_beam_search") != json(false)) refuse("use_beam_search", "");
  if (given(body, "length_penalty") && body.at("length_penalty") != json(1) && body.at("length_penalty") != json(1.0))
    refuse("length_penalty", "it applies to beam search, which this server does not do");
  for (const char* key : {"prompt_logprobs", "allowed_token_ids", "guided_json", "guided_regex", "guided_choice",
                          "guided_grammar", "structured_outputs", "truncate_prompt_tokens"})
    if (given(body, key)) refuse(key, "");
  if (given(body, "response_format")) {
    const json& v = body.at("response_format");
    if (!v.is_object() || v.value("type", std::string()) != "text")
      refuse("response_format", "only {\"type\": \"text\"}");
  }
  if (given(body, "include_stop_str_in_output") && body.at("include_stop_str_in_output") != json(false))
    refuse("include_stop_str_in_output", "");
}

}  // namespace fk::serve
