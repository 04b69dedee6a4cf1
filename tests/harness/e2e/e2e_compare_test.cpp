// The end-to-end judgement on synthetic runs: token agreement and first divergence, the
// logit distance (max relative error, mean absolute error, KL), the margin of a divergence,
// and the verdict bounds; for
// Batch runs (text encoders), the hidden-state error, dense cosine and BGE-M3 head bounds and
// the speedup of one batch, folded over repeats.
#include <gtest/gtest.h>

#include <cmath>

#include "harness/e2e/e2e_compare.h"
#include "harness/e2e/e2e_run.h"
#include "harness/e2e/repeat_runs.h"

namespace fk::e2e {
namespace {

using nlohmann::json;

json run(const std::vector<std::vector<int64_t>>& outputs, double tok_per_s, double max_rel, double mean_kl) {
  return {{"outputs", outputs},
          {"elapsed_s", 10.0 / tok_per_s},
          {"e2e_s", std::vector<double>(outputs.size(), 1.0 / tok_per_s)},
          {"output_tokens_per_s", tok_per_s},
          {"teacher_forced", {{"positions", 16}, {"max_rel_err", max_rel}, {"mean_abs_err", 0.0}, {"mean_kl", mean_kl}}}};
}

TEST(E2eCompare, AgreementDivergenceAndSpeedup) {
  const json base = run({{1, 2, 3}, {4, 5}, {6}}, 100, 0, 0);
  const json cand = run({{1, 2, 3}, {4, 9}, {7}}, 150, 0.001, 1e-5);
  const json c = compare_runs(base, cand);
  EXPECT_EQ(c["token_agreement"]["exact_match"], 1);
  EXPECT_NEAR(c["token_agreement"]["exact_match_rate"].get<double>(), 1.0 / 3, 1e-12);
  EXPECT_EQ(c["token_agreement"]["first_divergence_min"], 0);
  EXPECT_EQ(c["token_agreement"]["first_divergence"], json({-1, 1, 0}));
  EXPECT_NEAR(c["speedup"]["throughput"].get<double>(), 1.5, 1e-12);
  EXPECT_NEAR(c["speedup"]["latency"].get<double>(), 1.5, 1e-12);
  // Token flips alone do not fail a candidate whose logits are within bounds (near ties).
  EXPECT_EQ(c["verdict"], "PASSED");
}

TEST(E2eCompare, LogitErrorOrKlBeyondBoundsIsIncorrect) {
  const json base = run({{1}}, 100, 0, 0);
  EXPECT_EQ(compare_runs(base, run({{1}}, 500, kMaxRelLogitErr * 2, 0))["verdict"], "INCORRECT");
  EXPECT_EQ(compare_runs(base, run({{1}}, 500, 0, kMaxMeanKl * 2))["verdict"], "INCORRECT");
  json no_positions = run({{1}}, 500, 0, 0);
  no_positions["teacher_forced"]["positions"] = 0;
  EXPECT_EQ(compare_runs(base, no_positions)["verdict"], "INCORRECT");
  EXPECT_THROW(compare_runs(base, run({{1}, {2}}, 100, 0, 0)), Error);  // different request counts
}

// A greedy token that left the baseline's where, teacher forced on the baseline's tokens,
// the baseline's token leads by more than the bound is a wrong step (a decode kernel the
// prefill-only teacher forcing never runs), not a near-tie flip.
TEST(E2eCompare, DivergenceBeyondANearTieIsIncorrect) {
  const json base = run({{1, 2, 3}, {4, 5}}, 100, 0, 0);
  json cand = run({{1, 2, 3}, {4, 9}}, 150, 0.001, 1e-5);
  cand["divergence"] = {{"requests", 2}, {"diverged", 1}, {"max_margin", kMaxDivergenceMargin / 2},
                        {"worst", {{"request", 1}, {"output", 1}, {"baseline_token", 5}, {"candidate_token", 9},
                                   {"margin", kMaxDivergenceMargin / 2}}}};
  EXPECT_EQ(compare_runs(base, cand)["verdict"], "PASSED") << "a near-tie flip";
  cand["divergence"]["max_margin"] = cand["divergence"]["worst"]["margin"] = 0.3;
  const json c = compare_runs(base, cand);
  EXPECT_EQ(c["verdict"], "INCORRECT");
  EXPECT_EQ(c["reason"], "request 1 chose token 9 at output 1 where, teacher forced, the baseline's token 5 leads it "
                         "by 0.3 of the logits' range (bound 0.05): not a near-tie");
  EXPECT_EQ(c["divergence"]["diverged"], 1);
}

// The decode steps' teacher-forced logits (fk e2e eval forces the generated tokens through
// decode steps) are held to the prefill logits' bounds.
TEST(E2eCompare, DecodeForcedLogitsBeyondBoundsAreIncorrect) {
  const json base = run({{1, 2}}, 100, 0, 0);
  json cand = run({{1, 2}}, 150, 0.001, 1e-5);
  cand["decode_forced"] = {{"positions", 8}, {"max_rel_err", 0.01}, {"mean_abs_err", 0.0}, {"mean_kl", 1e-4}};
  EXPECT_EQ(compare_runs(base, cand)["verdict"], "PASSED");
  cand["decode_forced"]["max_rel_err"] = kMaxRelLogitErr * 2;
  EXPECT_EQ(compare_runs(base, cand)["verdict"], "INCORRECT");
  cand["decode_forced"]["max_rel_err"] = 0.01;
  cand["decode_forced"]["mean_kl"] = kMaxMeanKl * 2;
  const json c = compare_runs(base, cand);
  EXPECT_EQ(c["verdict"], "INCORRECT");
  EXPECT_NE(c["reason"].get<std::string>().find("decode steps' teacher-forced logits"), std::string::npos);
}

TEST(E2eCompare, LogitDistance) {
  const float a[4] = {1, 2, 3, 4};
  LogitDistance same = logit_distance(a, a, 4);
  EXPECT_EQ(same.max_rel_err, 0);
  EXPECT_NEAR(same.kl, 0, 1e-12);
  const float b[4] = {1, 2, 3, 5};
  const LogitDistance d = logit_distance(a, b, 4);
  EXPECT_NEAR(d.max_rel_err, 0.25, 1e-12);  // |4 - 5| / max|a|
  EXPECT_NEAR(d.mean_abs_err, 0.25, 1e-12);
  // KL(softmax(a) || softmax(b)) by hand.
  double za = 0, zb = 0;
  for (int i = 0; i < 4; ++i) za += std::exp(double{a[i]}), zb += std::exp(double{b[i]});
  double kl = 0;
  for (int i = 0; i < 4; ++i) kl += std::exp(double{a[i]}) / za * ((a[i] - std::log(za)) - (b[i] - std::log(zb)));
  EXPECT_NEAR(d.kl, kl, 1e-9);
}

json batch_run(double elapsed_s, double max_rel, double min_cos, std::string checksum = "a") {
  return {{"pattern", "batch"},
          {"outputs", {checksum}},
          {"elapsed_s", elapsed_s},
          {"sequences", 4},
          {"tokens", 400},
          {"tokens_per_s", 400 / elapsed_s},
          {"teacher_forced", {{"positions", 400}, {"max_rel_err", max_rel}, {"mean_abs_err", 0.0}, {"min_cosine", min_cos}}}};
}

TEST(E2eCompare, BatchRunsByHiddenStatesAndDenseVectors) {
  const json base = fold_runs({batch_run(2.0, 0, 1), batch_run(2.2, 0, 1), batch_run(1.8, 0, 1)});
  EXPECT_DOUBLE_EQ(base["elapsed_s"].get<double>(), 2.0);
  EXPECT_TRUE(base["reproducible"].get<bool>());
  const json honest = fold_runs({batch_run(1.0, 0.004, 0.99999), batch_run(1.2, 0.004, 0.99999)});
  const json c = compare_runs(base, honest);
  EXPECT_EQ(c["verdict"], "PASSED") << c.dump();
  EXPECT_NEAR(c["speedup"]["throughput"].get<double>(), 2.0 / 1.1, 1e-12);
  EXPECT_NEAR(c["speedup"]["latency"].get<double>(), 2.0 / 1.1, 1e-12);
  EXPECT_EQ(compare_runs(base, batch_run(1.0, kMaxRelHiddenErr * 2, 1))["verdict"], "INCORRECT");
  EXPECT_EQ(compare_runs(base, batch_run(1.0, 0, kMinDenseCosine - 0.01))["verdict"], "INCORRECT");
  json none = batch_run(1.0, 0, 1);
  none.erase("teacher_forced");
  EXPECT_EQ(compare_runs(base, none)["verdict"], "INCORRECT");
  EXPECT_FALSE(fold_runs({batch_run(1, 0, 1, "a"), batch_run(1, 0, 1, "b")})["reproducible"].get<bool>());
}

// BGE-M3's heads: the sparse weights and the ColBERT vectors are judged beside the hidden
// states and the dense vectors (a kernel wrong only for the heads' shapes moves only them).
TEST(E2eCompare, BatchRunsByTheirSparseWeightsAndColbertVectors) {
  const json base = batch_run(2.0, 0, 1);
  json cand = batch_run(1.0, 0.004, 0.99999);
  cand["teacher_forced"]["sparse_max_rel_err"] = 0.004;
  cand["teacher_forced"]["colbert_min_cosine"] = 0.99999;
  EXPECT_EQ(compare_runs(base, cand)["verdict"], "PASSED");
  json sparse = cand;
  sparse["teacher_forced"]["sparse_max_rel_err"] = 1.0;
  EXPECT_EQ(compare_runs(base, sparse)["reason"], "the sparse weights differ by up to 1 of the largest (bound 0.05)");
  json colbert = cand;
  colbert["teacher_forced"]["colbert_min_cosine"] = 0.5;
  EXPECT_EQ(compare_runs(base, colbert)["verdict"], "INCORRECT");
}

}  // namespace
}  // namespace fk::e2e
