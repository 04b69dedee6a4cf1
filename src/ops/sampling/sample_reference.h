// The sampling semantics of fk/ops/sampling.h for one row, in double: the CPU reference
// (and oracle) of `sample`, and what its output check uses to judge a GPU token.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "fk/ops/sampling.h"

namespace fk::ops {

struct SampleParams {
  double temperature = 1;
  int64_t top_k = 0;
  double top_p = 1;
  double min_p = 0;
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// One row's draw and the distribution it came from.
struct SampleTrace {
  int64_t token = -1;
  bool greedy = false;
  double u = 0;                    // the uniform draw (sampled rows)
  std::vector<int64_t> survivors;  // the tokens that survived the filters, in rank order
  std::vector<double> weights;     // w of each survivor
  double total = 0;                // sum of weights
};

// Parameters of row `row` of a host-side SampleArgs.
SampleParams sample_params(const SampleArgs& a, int64_t row);

// Throws fk::Error (FK_ERR_INVALID_ARGUMENT) naming the row and the bad value.
void validate_sample_params(const SampleParams& p, int64_t row);

// Validates the parameters and the logits (no NaN or +inf; a finite maximum when sampling)
// and draws the row's token.
SampleTrace sample_row(const std::vector<double>& logits, const SampleParams& p, int64_t row);

// The logits of row `row` of a host-side SampleArgs as doubles.
std::vector<double> sample_row_logits(const SampleArgs& a, int64_t row);

// Judges a token from another implementation against the reference trace: "" when the
// token is the reference's, or when it survived the filters and u lies within `cdf_eps`
// of its interval of the cumulative distribution (float rounding can move a draw across a
// boundary); otherwise why not.
std::string judge_sampled_token(const SampleTrace& t, int64_t token, double cdf_eps);

// judge_sampled_token for row `row` with the filter thresholds also read kFilterSlack
// tighter and looser: float weights move the top-p and min-p cuts when they fall within
// rounding of a survivor's boundary, and a token one past the reference's cut (or a draw
// renormalised without it) is then as right as the reference's.
inline constexpr double kFilterSlack = 1e-5;
std::string judge_sampled_row(const std::vector<double>& logits, const SampleParams& p, int64_t row, int64_t token,
                              double cdf_eps);

}  // namespace fk::ops
