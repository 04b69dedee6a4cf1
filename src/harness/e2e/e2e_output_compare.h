// The comparison of two folded runs of a pattern that times one fixed piece of work and
// checks its outputs against the baseline run's (FLUX.1, the detectors, DLRM, the image
// classifiers: e2e_denoise_run.h and its siblings). Each pattern says what it bounds and how
// a failure reads; the rest is the same for all: speedup is the ratio of the sides' median
// times (one fixed piece of work, so throughput, latency and elapsed time move together),
// and the verdict is INCORRECT at the first value beyond its bound, or when no outputs were
// compared, whatever the speed.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace fk::e2e {

// One bound on a field of the candidate's "agreement". A value beyond it fails with the
// reason `before` + the value + `after` + " (bound B)".
struct OutputBound {
  std::string key;
  double bound = 0;
  bool at_least = false;  // false: the value must be at most `bound`
  std::string before, after;
};

inline OutputBound at_most(std::string key, double bound, std::string before, std::string after = "") {
  return {std::move(key), bound, false, std::move(before), std::move(after)};
}
inline OutputBound at_least(std::string key, double bound, std::string before, std::string after = "") {
  return {std::move(key), bound, true, std::move(before), std::move(after)};
}

// The sides' elapsed_s and their `reported` fields (e.g. images_per_s), the speedup, the
// candidate's agreement, the bounds and the verdict (with its reason when not PASSED). The
// bounds are checked in order; a value that is missing or not a number (a NaN is stored
// as null) is beyond every bound.
nlohmann::json compare_output_runs(const nlohmann::json& baseline, const nlohmann::json& candidate,
                                   const std::vector<std::string>& reported, const std::vector<OutputBound>& bounds);

}  // namespace fk::e2e
