// gpt-oss on the CPU backend against transformers' GptOssForCausalLM on a tiny random
// checkpoint (tests/data/models/gpt_oss/, written by make_gpt_oss_goldens.py): the
// logits of one prefill over prompt + generated tokens (teacher forcing through the engine;
// the longer prompt passes the 8-token sliding window), and greedy generation through the
// whole engine with chunked prefill beside decodes. Skips, saying so, while the data has
// not been made (it needs torch and transformers).
#include <gtest/gtest.h>


#include "models/llm/golden_check.h"  // tests/models/llm/

namespace fk::engine::test {
namespace {

constexpr const char* kFamily = "gpt_oss";

TEST(GptOssGolden, LogitsMatchTransformers) {
  check_engine_golden(kFamily, kLogitTol);
}

}  // namespace
}  // namespace fk::engine::test
