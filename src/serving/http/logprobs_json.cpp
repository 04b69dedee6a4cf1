#include "serving/http/logprobs_json.h"

#include <algorithm>
#include <cmath>

#include "fk/status.h"

namespace fk::serve {

using nlohmann::json;

namespace {

constexpr double kFloorLogprob = -9999.0;

double sendable(float logprob) {
  return std::isnan(logprob) ? logprob : std::max(static_cast<double>(logprob), kFloorLogprob);
}

int64_t characters(const std::string& s) {  // UTF-8 code points, as Python's len() counts
  return std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

json utf8_bytes(const std::string& s) {
  json b = json::array();
  for (char c : s) b.push_back(static_cast<int>(static_cast<unsigned char>(c)));
  return b;
}

}  // namespace

std::string logprob_token_text(const tokenizer::Tokenizer* tok, int64_t id) {
  if (tok == nullptr) return concat("token_id:", id);
  const int64_t one[] = {id};
  return tok->decode(one);
}

json completion_logprobs_json(const std::vector<int64_t>& tokens, const std::vector<engine::TokenLogprobs>& logprobs,
                              const tokenizer::Tokenizer* tok, int64_t& text_offset) {
  FK_CHECK(tokens.size() == logprobs.size(), "logprobs: ", logprobs.size(), " entries for ", tokens.size(), " tokens");
  json texts = json::array(), values = json::array(), tops = json::array(), offsets = json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const engine::TokenLogprobs& lp = logprobs[i];
    const std::string text = logprob_token_text(tok, tokens[i]);
    texts.push_back(text);
    values.push_back(sendable(lp.logprob));
    json top = json::object();
    for (size_t j = 0; j < lp.top_ids.size(); ++j) {
      const std::string alt = logprob_token_text(tok, lp.top_ids[j]);
      if (!top.contains(alt)) top[alt] = sendable(lp.top_logprobs[j]);  // two ids, one text: the likelier
    }
    if (!top.contains(text)) top[text] = sendable(lp.logprob);
    tops.push_back(std::move(top));
    offsets.push_back(text_offset);
    text_offset += characters(text);
  }
  return {{"tokens", texts}, {"token_logprobs", values}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json chat_logprobs_json(const std::vector<int64_t>& tokens, const std::vector<engine::TokenLogprobs>& logprobs,
                        const tokenizer::Tokenizer* tok) {
  FK_CHECK(tokens.size() == logprobs.size(), "logprobs: ", logprobs.size(), " entries for ", tokens.size(), " tokens");
  json content = json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const engine::TokenLogprobs& lp = logprobs[i];
    const std::string text = logprob_token_text(tok, tokens[i]);
    json top = json::array();
    for (size_t j = 0; j < lp.top_ids.size(); ++j) {
      const std::string alt = logprob_token_text(tok, lp.top_ids[j]);
      top.push_back({{"token", alt}, {"logprob", sendable(lp.top_logprobs[j])}, {"bytes", utf8_bytes(alt)}});
    }
    content.push_back(
        {{"token", text}, {"logprob", sendable(lp.logprob)}, {"bytes", utf8_bytes(text)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

}  // namespace fk::serve
