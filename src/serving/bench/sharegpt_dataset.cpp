#include "serving/bench/sharegpt_dataset.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "fk/status.h"

namespace fk::serve {

using nlohmann::json;

namespace {

struct Turns {
  std::string prompt, answer;
};

std::string entry_name(const std::string& path, size_t i, const json& entry) {
  std::string name = concat(path, ": entry ", i);
  if (entry.is_object())
    if (const auto id = entry.find("id"); id != entry.end() && (id->is_string() || id->is_number()))
      name += concat(" (id ", id->dump(), ")");
  return name;
}

// The first human turn that a gpt turn answers; false when the conversation has none (or
// fewer than 2 turns). Throws for turns that are not {"from": string, "value": string}.
bool first_exchange(const std::string& where, const json& entry, Turns& out) {
  FK_CHECK(entry.is_object(), where, ": must be an object with 'conversations', got ", entry.type_name());
  const auto conv = entry.find("conversations");
  FK_CHECK(conv != entry.end() && conv->is_array(), where, ": 'conversations' must be a list of turns");
  for (size_t t = 0; t < conv->size(); ++t) {
    const json& turn = (*conv)[t];
    FK_CHECK(turn.is_object() && turn.contains("from") && turn["from"].is_string() && turn.contains("value") &&
                 turn["value"].is_string(),
             where, ": turn ", t, " must be an object with string 'from' and 'value', got ", turn.dump().substr(0, 120));
  }
  if (conv->size() < 2) return false;
  for (size_t t = 0; t + 1 < conv->size(); ++t)
    if ((*conv)[t]["from"] == "human" && (*conv)[t + 1]["from"] == "gpt") {
      out = {(*conv)[t]["value"].get<std::string>(), (*conv)[t + 1]["value"].get<std::string>()};
      return true;
    }
  return false;
}

}  // namespace

ShareGptSample sample_sharegpt(const ShareGptOptions& o, const tokenizer::Tokenizer& tok) {
  FK_CHECK(o.num_prompts > 0, "sharegpt: the number of prompts must be positive, got ", o.num_prompts);
  FK_CHECK(o.output_len >= 0 && o.min_prompt_len >= 1 && o.max_prompt_len >= o.min_prompt_len &&
               o.max_total_len > o.min_prompt_len,
           "sharegpt: length limits must satisfy 1 <= min prompt <= max prompt, min prompt < max total");
  std::ifstream f(o.path);
  FK_CHECK(f.good(), "sharegpt: cannot read ", o.path);
  std::stringstream text;
  text << f.rdbuf();
  json data;
  try {
    data = json::parse(text.str());
  } catch (const json::parse_error& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, o.path, ": not valid JSON: ", e.what());
  }
  FK_CHECK(data.is_array(), o.path, ": must hold a JSON list of conversations, got ", data.type_name());

  // Check every entry first: a malformed file fails whatever the seed picks.
  std::vector<Turns> exchanges;
  for (size_t i = 0; i < data.size(); ++i) {
    Turns t;
    if (first_exchange(entry_name(o.path, i, data[i]), data[i], t)) exchanges.push_back(std::move(t));
  }
  // Fisher-Yates with our own index draw: the order is the same with every standard library.
  std::mt19937_64 rng(o.seed);
  for (size_t i = exchanges.size(); i > 1; --i) std::swap(exchanges[i - 1], exchanges[rng() % i]);

  ShareGptSample out;
  out.conversations = static_cast<int64_t>(data.size());
  for (const Turns& t : exchanges) {
    if (static_cast<int64_t>(out.requests.size()) == o.num_prompts) break;
    std::vector<int64_t> prompt = tok.encode(t.prompt, /*add_special_tokens=*/true);
    const auto prompt_len = static_cast<int64_t>(prompt.size());
    const int64_t output_len =
        o.output_len > 0 ? o.output_len : static_cast<int64_t>(tok.encode(t.answer, /*add_special_tokens=*/false).size());
    if (prompt_len < o.min_prompt_len || (o.output_len == 0 && output_len < o.min_output_len)) continue;
    if (prompt_len > o.max_prompt_len || prompt_len + output_len > o.max_total_len) continue;
    out.requests.push_back({std::move(prompt), output_len});
  }
  out.unique_prompts = static_cast<int64_t>(out.requests.size());
  FK_CHECK(out.unique_prompts > 0, o.path, ": none of its ", data.size(),
           " conversations gives a request within the length limits (prompt ", o.min_prompt_len, "..",
           o.max_prompt_len, " tokens, prompt + output <= ", o.max_total_len, ")");
  for (size_t i = 0; static_cast<int64_t>(out.requests.size()) < o.num_prompts; ++i) {
    BenchRequest again = out.requests[i];
    out.requests.push_back(std::move(again));
  }
  return out;
}

}  // namespace fk::serve
