// ShareGPT conversations as serving-benchmark requests (`fk bench serve --dataset-name
// sharegpt`), sampled as vLLM's benchmark_serving does. The file is a JSON list of
//   {"id": "...", "conversations": [{"from": "human" | "gpt" | ..., "value": "..."}, ...]}
// A conversation gives one request: its first human turn followed by a gpt turn is the
// prompt (tokenized with the model's tokenizer, special tokens added as the server adds
// them to text prompts), and the length of that gpt turn in tokens (without special
// tokens) is the output length. Conversations with fewer than 2 turns or without such a
// pair are skipped; so are prompts under min_prompt_len tokens, outputs under
// min_output_len tokens (unless output_len overrides them), prompts over max_prompt_len and
// prompt + output over max_total_len. The kept conversations are shuffled with `seed`
// and the first num_prompts taken; when fewer pass, they are used again in the same order
// until num_prompts are reached.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "text/tokenizer.h"
#include "serving/bench/serving_bench.h"

namespace fk::serve {

struct ShareGptOptions {
  std::string path;
  int64_t num_prompts = 200;
  uint64_t seed = 0;
  int64_t output_len = 0;  // > 0: every request's output length (--sharegpt-output-len)
  int64_t min_prompt_len = 4, min_output_len = 4;
  int64_t max_prompt_len = 1024, max_total_len = 2048;
};

struct ShareGptSample {
  std::vector<BenchRequest> requests;
  int64_t conversations = 0;   // entries in the file
  int64_t unique_prompts = 0;  // distinct conversations among the requests
};

// Throws fk::Error naming the file (and the entry, by index and id) for a file that cannot
// be read, is not JSON, or does not have the structure above.
ShareGptSample sample_sharegpt(const ShareGptOptions& options, const tokenizer::Tokenizer& tok);

}  // namespace fk::serve
