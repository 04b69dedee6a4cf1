// Qwen3-Next on the CPU backend against transformers' Qwen3NextForCausalLM on a tiny random
// checkpoint (tests/data/models/qwen3_next/, written by make_qwen3_next_goldens.py): the
// logits of one prefill over prompt + generated tokens (teacher forcing through the engine,
// which gives the sequence its recurrent state slot), and greedy generation through the
// whole engine with chunked prefill beside decodes. Skips, saying so, while the data has
// not been made (it needs torch and transformers).
#include <gtest/gtest.h>

#include <filesystem>

#include "models/llm/golden_check.h"  // tests/models/llm/

namespace fk::engine::test {
namespace {

constexpr const char* kFamily = "qwen3_next";

// Wider than the other families' kLogitTol: the hybrid rounds more activations to bf16 (the
// short convolution's output, the gates, the delta rule's output and its gated norm, the
// attention's output gate), where transformers' float32 reference rounds none. Measured on
// this data: 0.6-2.4% per position, 2.9% and 4.0% at two positions of the longer prompt,
// with no growth along the sequence (the recurrent state does not drift); a structural
// error (a lost state, a wrong gate) is of the order of the logits themselves.
constexpr double kQwen3NextLogitTol = 0.05;

TEST(Qwen3NextGolden, LogitsMatchTransformers) {
  if (!std::filesystem::exists(model_dir(kFamily) + "/golden.json"))
    GTEST_SKIP() << "no golden data in " << model_dir(kFamily)
                 << ": run tests/data/models/make_qwen3_next_goldens.py tests/data/models (torch, transformers)";
  const Golden g = load_golden(kFamily);
  EngineConfig ec;
  ec.model = model_dir(kFamily);
  ec.backend = DeviceType::cpu;
  ec.max_num_batched_tokens = 256;
  ec.max_num_seqs = 64;  // prefill_logits reads every position as a sequence's last row
  ec.num_pages = 64;
  ec.max_model_len = 256;

  // 1. Teacher-forced logits of every position.
  {
    Engine e(ec);
    for (size_t p = 0; p < g.prompts.size(); ++p) {
      std::vector<int64_t> tokens = g.prompts[p];
      tokens.insert(tokens.end(), g.generated[p].begin(), g.generated[p].end());
      const std::vector<float> got = e.prefill_logits(tokens, static_cast<int64_t>(tokens.size()));
      const std::vector<float>& want = g.logits[p];
      ASSERT_EQ(got.size(), want.size());
      double worst = 0;
      size_t worst_row = 0;
      for (size_t r = 0; r < tokens.size(); ++r) {
        const float* w = want.data() + r * static_cast<size_t>(g.vocab);
        const float* x = got.data() + r * static_cast<size_t>(g.vocab);
        double err = 0;
        for (int64_t v = 0; v < g.vocab; ++v) err = std::max(err, std::fabs(static_cast<double>(x[v]) - w[v]));
        if (err / row_scale(w, g.vocab) > worst) worst = err / row_scale(w, g.vocab), worst_row = r;
      }
      EXPECT_LE(worst, kQwen3NextLogitTol) << "prompt " << p << ": worst logit error at position " << worst_row;
    }
  }

  // 2. Greedy generation; a budget of 16 chunks the longer prompt beside the other's decodes.
  ec.max_num_batched_tokens = 16;
  Engine engine(ec);
  SamplingParams sp;
  sp.temperature = 0;
  sp.ignore_eos = true;
  sp.max_tokens = static_cast<int64_t>(g.generated[0].size());
  const auto results = engine.generate(g.prompts, sp);
  int64_t compared = 0;
  for (size_t p = 0; p < g.prompts.size(); ++p) {
    const auto& want = g.generated[p];
    const auto& got = results[p].output_tokens;
    ASSERT_EQ(got.size(), want.size()) << "prompt " << p;
    for (size_t i = 0; i < want.size(); ++i) {  // up to transformers' first unclear choice
      const float* row = g.logits[p].data() + (g.prompts[p].size() - 1 + i) * static_cast<size_t>(g.vocab);
      if (top2_margin(row, g.vocab) < kClearMargin * row_scale(row, g.vocab)) break;
      EXPECT_EQ(got[i], want[i]) << "prompt " << p << " token " << i << " (transformers' choice was clear)";
      ++compared;
    }
  }
  EXPECT_GT(compared, 0) << "no clear greedy choice to compare";
}

}  // namespace
}  // namespace fk::engine::test
