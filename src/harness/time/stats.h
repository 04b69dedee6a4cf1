// Order statistics of timing samples: the median and percentiles every benchmark report
// uses (percentiles interpolate linearly between the closest ranks, as numpy's default).
#pragma once
#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

namespace fk::bench {

struct Summary {
  size_t n = 0;
  double min = 0, max = 0, mean = 0, stddev = 0;
  double median = 0, p10 = 0, p90 = 0;
  // Relative spread (p90 - p10) / median: how noisy the samples were.
  double spread() const { return median > 0 ? (p90 - p10) / median : 0; }
};

// q in [0, 100]. Throws fk::Error for an empty sample or q outside [0, 100].
double percentile(std::vector<double> samples, double q);
double median(std::vector<double> samples);
Summary summarize(std::vector<double> samples);

nlohmann::json to_json(const Summary& s);

}  // namespace fk::bench
