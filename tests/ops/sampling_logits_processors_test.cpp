// The logits processors' CPU references (apply_logit_bias, apply_bad_words, apply_penalties):
// hand-computed values in vLLM's semantics, an independent per-token formulation of the
// penalties on random rows, and the errors bad ids, offsets and parameters get.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/sampling.h"
#include "fk/philox.h"
#include "fk/status.h"
#include "support/test_seed.h"

namespace fk::ops {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor f32(const std::vector<float>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::f32);
  for (size_t i = 0; i < v.size(); ++i) t.data_as<float>()[i] = v[i];
  return t;
}
Tensor i32(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::i32);
  for (size_t i = 0; i < v.size(); ++i) t.data_as<int32_t>()[i] = v[i];
  return t;
}
Tensor matrix(const std::vector<std::vector<float>>& rows, DType dt = DType::f32) {
  const auto B = static_cast<int64_t>(rows.size());
  const int64_t V = B ? static_cast<int64_t>(rows[0].size()) : 1;
  Tensor t = Tensor::empty({B, V}, dt);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t v = 0; v < V; ++v) set(t.view(), rows[static_cast<size_t>(b)][static_cast<size_t>(v)], b, v);
  return t;
}
float at(const Tensor& m, int64_t b, int64_t v) { return static_cast<float>(get(m.view(), b, v)); }

template <class Args>
fk_status run_cpu(const Args& a) {
  return OpRegistry::global().baseline(Args::kName, DeviceType::cpu)(&a, nullptr);
}

// ---- apply_logit_bias

struct BiasCall {
  Tensor out, logits, ids, bias, indptr;
  ApplyLogitBiasArgs args() const { return {out, logits, ids, bias, indptr}; }
};

TEST(ApplyLogitBias, AddsBiasesAndBansCopyingTheRest) {
  BiasCall c{Tensor::empty({2, 5}, DType::f32),
             matrix({{1.f, 2.f, 3.f, 4.f, 5.f}, {-1.f, -2.f, 0.5f, -kInf, 0.f}}, DType::bf16),
             i32({1, 3, 1, 4, 0, 3}), f32({2.f, -kInf, 0.5f, 100.f, -100.f, 7.f}), i32({0, 3, 6})};
  ASSERT_EQ(run_cpu(c.args()), FK_OK) << last_error_message();
  const std::vector<float> row0 = {1.f, 4.5f, 3.f, -kInf, 5.f}, row1 = {-101.f, -2.f, 0.5f, -kInf, 100.f};
  for (int64_t v = 0; v < 5; ++v) {
    EXPECT_EQ(at(c.out, 0, v), row0[static_cast<size_t>(v)]) << v;
    EXPECT_EQ(at(c.out, 1, v), row1[static_cast<size_t>(v)]) << v;
  }
}

TEST(ApplyLogitBias, NamesBadIdsOffsetsAndBiases) {
  auto error_of = [](BiasCall c) {
    EXPECT_NE(run_cpu(c.args()), FK_OK);
    return std::string(last_error_message());
  };
  auto call = [] {
    return BiasCall{Tensor::empty({2, 4}, DType::f32), matrix({{0, 0, 0, 0}, {0, 0, 0, 0}}), i32({1, 2}),
                    f32({1.f, 2.f}), i32({0, 1, 2})};
  };
  BiasCall c = call();
  c.ids = i32({1, 4});
  EXPECT_NE(error_of(c).find("ids[1] = 4 is outside the vocabulary [0, 4)"), std::string::npos) << error_of(c);
  c = call();
  c.indptr = i32({0, 2, 1});
  EXPECT_NE(error_of(c).find("indptr[2] = 1"), std::string::npos) << error_of(c);
  c = call();
  c.indptr = i32({0, 1, 1});
  EXPECT_NE(error_of(c).find("must be the length of ids"), std::string::npos) << error_of(c);
  c = call();
  c.bias = f32({kInf, 0.f});
  EXPECT_NE(error_of(c).find("bias[0] must be finite or -inf"), std::string::npos) << error_of(c);
  c = call();
  c.bias = f32({1.f});
  EXPECT_NE(error_of(c).find("bias"), std::string::npos) << error_of(c);
  c = call();
  c.out = Tensor::empty({2, 4}, DType::bf16);
  EXPECT_NE(error_of(c).find("out"), std::string::npos) << error_of(c);
}

// ---- apply_bad_words

struct BadWordsCall {
  Tensor logits, tokens, token_indptr, prompt_len, word_tokens, word_indptr, row_words;
  ApplyBadWordsArgs args() const {
    return {logits, tokens, token_indptr, prompt_len, word_tokens, word_indptr, row_words};
  }
};

TEST(ApplyBadWords, BansTheLastTokenOfWordsWhosePrefixEndsTheOutput) {
  // Row 0: prompt [9], output [5, 6, 7]. Row 1: prompt [9, 8], no output.
  // Row 0's words: [7, 2] (tail 7 matches: ban 2), [6, 3] (tail is 7: no), [4] (always: ban 4),
  // [6, 7, 1] (ban 1), [9, 5, 6, 7, 0] (longer than the output + 1: no).
  // Row 1's words: [8, 3] (8 is in the prompt only: no), [0] (ban 0).
  BadWordsCall c{matrix({{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2}}),
                 i32({9, 5, 6, 7, 9, 8}),
                 i32({0, 4, 6}),
                 i32({1, 2}),
                 i32({7, 2, 6, 3, 4, 6, 7, 1, 9, 5, 6, 7, 0, 8, 3, 0}),
                 i32({0, 2, 4, 5, 8, 13, 15, 16}),
                 i32({0, 5, 7})};
  ASSERT_EQ(run_cpu(c.args()), FK_OK) << last_error_message();
  for (int64_t v = 0; v < 10; ++v) {
    const bool banned0 = v == 1 || v == 2 || v == 4;
    EXPECT_EQ(at(c.logits, 0, v), banned0 ? -kInf : 1.f) << v;
    EXPECT_EQ(at(c.logits, 1, v), v == 0 ? -kInf : 2.f) << v;
  }
}

TEST(ApplyBadWords, NamesBadWordsAndLists) {
  auto call = [] {
    return BadWordsCall{matrix({{0, 0, 0}}), i32({1, 2}), i32({0, 2}), i32({1}), i32({2, 1}), i32({0, 2}),
                        i32({0, 1})};
  };
  auto error_of = [](const BadWordsCall& c) {
    EXPECT_NE(run_cpu(c.args()), FK_OK);
    return std::string(last_error_message());
  };
  BadWordsCall c = call();
  c.word_tokens = i32({2, 3});
  EXPECT_NE(error_of(c).find("word_tokens[1] = 3 is outside the vocabulary"), std::string::npos) << error_of(c);
  c = call();
  c.word_indptr = i32({0, 0});
  c.word_tokens = i32({});
  EXPECT_NE(error_of(c).find("bad word 0 is empty"), std::string::npos) << error_of(c);
  c = call();
  c.prompt_len = i32({3});
  EXPECT_NE(error_of(c).find("prompt_len[0] = 3"), std::string::npos) << error_of(c);
  c = call();
  c.row_words = i32({0, 0});
  EXPECT_NE(error_of(c).find("row_words"), std::string::npos) << error_of(c);
  c = call();
  c.tokens = i32({1, -1});
  EXPECT_NE(error_of(c).find("tokens[1] = -1"), std::string::npos) << error_of(c);
}

// ---- apply_penalties

struct PenaltiesCall {
  Tensor logits, tokens, token_indptr, prompt_len, rep, freq, pres, counts;
  ApplyPenaltiesArgs args() const { return {logits, tokens, token_indptr, prompt_len, rep, freq, pres, counts}; }
};

TEST(ApplyPenalties, FollowsVllmOnPromptAndOutputTokens) {
  // Row 0: prompt [0], output [1, 1, 3]; repetition 2, frequency 0.5, presence 0.25.
  //  0: prompt only: repetition (2 / 2 = 1), no frequency or presence.
  //  1: twice in the output, negative: -1 * 2 - 0.5 * 2 - 0.25 = -3.25.
  //  2: unseen: unchanged.  3: once, positive: 0.5 / 2 - 0.5 - 0.25 = -0.5.  4: -inf stays.
  // Row 1: the same tokens with every penalty off: unchanged.
  const std::vector<float> x = {2.f, -1.f, 3.f, 0.5f, -kInf};
  PenaltiesCall c{matrix({x, x}),     i32({0, 1, 1, 3, 0, 1, 1, 3}), i32({0, 4, 8}), i32({1, 1}),
                  f32({2.f, 1.f}),    f32({0.5f, 0.f}),              f32({0.25f, 0.f}),
                  Tensor::empty({2, 5}, DType::i32)};
  ASSERT_EQ(run_cpu(c.args()), FK_OK) << last_error_message();
  const std::vector<float> want = {1.f, -3.25f, 3.f, -0.5f, -kInf};
  for (int64_t v = 0; v < 5; ++v) {
    EXPECT_EQ(at(c.logits, 0, v), want[static_cast<size_t>(v)]) << v;
    EXPECT_EQ(at(c.logits, 1, v), x[static_cast<size_t>(v)]) << v;
  }
}

// Token by token, as a sampler that keeps running counts would: each occurrence in the
// output subtracts the frequency penalty, the first also the presence penalty, and the
// repetition penalty scales the raw logit of every token seen anywhere once.
TEST(ApplyPenalties, MatchesAPerTokenFormulationOnRandomRows) {
  const uint64_t seed = test::seed_for("ApplyPenalties.random");
  const int64_t B = 6, V = 40;
  std::vector<std::vector<float>> rows(B, std::vector<float>(V));
  std::vector<int32_t> tokens, indptr{0}, prompt_len;
  std::vector<float> rep, freq, pres;
  uint64_t i = 0;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t v = 0; v < V; ++v) rows[b][v] = -6.f + 12.f * philox_uniform(seed, 1, i++);
    const int64_t p = philox_int(seed, 2, b, 0, 12), o = philox_int(seed, 3, b, 0, 30);
    for (int64_t k = 0; k < p + o; ++k) tokens.push_back(static_cast<int32_t>(philox_int(seed, 4, i++, 0, V)));
    indptr.push_back(static_cast<int32_t>(tokens.size()));
    prompt_len.push_back(static_cast<int32_t>(p));
    rep.push_back(0.5f + 1.5f * philox_uniform(seed, 5, b));
    freq.push_back(-2.f + 4.f * philox_uniform(seed, 6, b));
    pres.push_back(-2.f + 4.f * philox_uniform(seed, 7, b));
  }
  PenaltiesCall c{matrix(rows), i32(tokens), i32(indptr), i32(prompt_len), f32(rep), f32(freq), f32(pres),
                  Tensor::empty({B, V}, DType::i32)};
  ASSERT_EQ(run_cpu(c.args()), FK_OK) << last_error_message();
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> want(rows[b].begin(), rows[b].end());
    std::map<int32_t, bool> scaled, present;
    for (int32_t k = indptr[b]; k < indptr[b + 1]; ++k) {
      const int32_t t = tokens[static_cast<size_t>(k)];
      if (!scaled[t]) {
        want[t] = rows[b][t] > 0 ? want[t] / rep[b] : want[t] * rep[b];
        scaled[t] = true;
      }
      if (k >= indptr[b] + prompt_len[b]) {
        want[t] -= freq[b];
        if (!present[t]) want[t] -= pres[b];
        present[t] = true;
      }
    }
    for (int64_t v = 0; v < V; ++v) EXPECT_NEAR(at(c.logits, b, v), want[v], 1e-5) << "seed " << seed << " row " << b;
  }
}

TEST(ApplyPenalties, NamesBadPenaltiesAndTokens) {
  auto call = [] {
    return PenaltiesCall{matrix({{0, 0, 0}}), i32({1, 2}), i32({0, 2}), i32({1}), f32({1.f}), f32({0.f}),
                         f32({0.f}), Tensor::empty({1, 3}, DType::i32)};
  };
  auto error_of = [](const PenaltiesCall& c) {
    EXPECT_NE(run_cpu(c.args()), FK_OK);
    return std::string(last_error_message());
  };
  PenaltiesCall c = call();
  c.rep = f32({0.f});
  EXPECT_NE(error_of(c).find("repetition_penalty[0] must be finite and > 0"), std::string::npos) << error_of(c);
  c = call();
  c.freq = f32({kInf});
  EXPECT_NE(error_of(c).find("frequency_penalty[0] must be finite"), std::string::npos) << error_of(c);
  c = call();
  c.tokens = i32({1, 3});
  EXPECT_NE(error_of(c).find("tokens[1] = 3 is outside the vocabulary [0, 3)"), std::string::npos) << error_of(c);
  c = call();
  c.counts = Tensor::empty({1, 2}, DType::i32);
  EXPECT_NE(error_of(c).find("counts"), std::string::npos) << error_of(c);
  c = call();
  c.token_indptr = i32({1, 2});
  EXPECT_NE(error_of(c).find("token_indptr[0] must be 0"), std::string::npos) << error_of(c);
}

}  // namespace
}  // namespace fk::ops
