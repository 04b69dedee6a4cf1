#include "harness/time/stats.h"

#include <algorithm>
#include <cmath>

#include "fk/status.h"

namespace fk::bench {

namespace {
// Percentile of an already sorted, non-empty sample.
double sorted_percentile(const std::vector<double>& s, double q) {
  const double rank = q / 100.0 * static_cast<double>(s.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, s.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return s[lo] + (s[hi] - s[lo]) * frac;
}
}  // namespace

double percentile(std::vector<double> samples, double q) {
  FK_CHECK(!samples.empty(), "percentile of an empty sample");
  FK_CHECK(q >= 0 && q <= 100, "percentile ", q, " is outside [0, 100]");
  std::sort(samples.begin(), samples.end());
  return sorted_percentile(samples, q);
}

double median(std::vector<double> samples) { return percentile(std::move(samples), 50); }

Summary summarize(std::vector<double> samples) {
  FK_CHECK(!samples.empty(), "summary of an empty sample");
  std::sort(samples.begin(), samples.end());
  Summary s;
  s.n = samples.size();
  s.min = samples.front();
  s.max = samples.back();
  double sum = 0;
  for (double v : samples) sum += v;
  s.mean = sum / static_cast<double>(s.n);
  double sq = 0;
  for (double v : samples) sq += (v - s.mean) * (v - s.mean);
  s.stddev = s.n > 1 ? std::sqrt(sq / static_cast<double>(s.n - 1)) : 0;
  s.median = sorted_percentile(samples, 50);
  s.p10 = sorted_percentile(samples, 10);
  s.p90 = sorted_percentile(samples, 90);
  return s;
}

nlohmann::json to_json(const Summary& s) {
  return {{"n", s.n},           {"median", s.median}, {"p10", s.p10}, {"p90", s.p90}, {"min", s.min},
          {"max", s.max},       {"mean", s.mean},     {"stddev", s.stddev}};
}

}  // namespace fk::bench
