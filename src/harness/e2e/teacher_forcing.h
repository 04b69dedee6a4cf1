// The oracle of fk e2e eval's Generate runs: teacher forcing (the logits an engine gives
// over a fixed token sequence) through the prefill path and through the decode path, the
// distance between two runs' logits, and where a run's greedy tokens left the baseline's.
// Every function takes an idle engine and borrows its blocks and slots for the call.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/safetensors/safetensors.h"
#include "harness/e2e/e2e_run.h"
#include "harness/e2e/workload.h"
#include "serving/generate/engine.h"

namespace fk::e2e {

// The prefill logits of `seqs` at positions[i] of each ([positions[i].size(), V] floats),
// the sequences packed into as few prefills as fit a step (its token budget, and one logit
// row per position within max_num_seqs), in order: packed sequences that see each other's
// state or KV (a varlen kernel ignoring its sequence boundaries) then move the logits,
// where sequences run one at a time would not show it.
std::vector<std::vector<float>> teacher_forced_logits(engine::Engine& e, const std::vector<std::vector<int64_t>>& seqs,
                                                      const std::vector<std::vector<int64_t>>& positions);

// The decode path's logits of `seqs` at their last last_n[i] positions (one decode step a
// token, the sequences batched: Engine::decode_logits_packed), in groups that fit a step.
std::vector<std::vector<float>> decode_forced_logits(engine::Engine& e, const std::vector<std::vector<int64_t>>& seqs,
                                                     const std::vector<int64_t>& last_n);

// The positions a teacher sequence is forced through decode steps at: its generated tokens
// (at most n); none for a sequence of one token.
int64_t decode_forced_count(int64_t length, int64_t generated, int64_t n);

// n positions of a sequence of `length` tokens, spread evenly from its first to its last:
// the first tokens are where state or KV leaked from a neighbour in the batch shows most
// (it decays further in), the last ones where the generated tokens are judged.
std::vector<int64_t> spread_positions(int64_t length, int64_t n);

// Worst and mean distances of logits from reference logits, over rows added one call at a
// time; as JSON {positions, max_rel_err, mean_abs_err, mean_kl, max_kl}.
struct LogitErrors {
  LogitDistance worst;
  double sum_abs = 0, sum_kl = 0;
  int64_t rows = 0;
  // `want` and `got`: [rows, V] row-major.
  void add(const float* want, const float* got, int64_t rows, int64_t V);
  nlohmann::json to_json() const;
};

// Where each request's greedy tokens (`outputs`) leave the baseline's ("output.<i>" of the
// teacher file), whether that was a near-tie: each diverging request is teacher forced on
// the baseline's tokens up to its first difference, and the margin by which the baseline's
// token leads the candidate's there (relative to the row's largest |logit|, as
// logit_distance) says whether the candidate's choice was a rounding flip or a wrong step.
// {requests, diverged, max_margin, worst: {request, output, baseline_token,
// candidate_token, margin}}.
nlohmann::json divergence(engine::Engine& e, const safetensors::File& teacher, const std::vector<WorkloadRequest>& reqs,
                          const std::vector<std::vector<int64_t>>& outputs);

}  // namespace fk::e2e
