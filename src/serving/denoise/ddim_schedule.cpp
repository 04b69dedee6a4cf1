#include "serving/denoise/ddim_schedule.h"

#include <algorithm>
#include <cmath>

#include "fk/status.h"

namespace fk::serving::denoise {
namespace {

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

DdimSchedule ddim_schedule(int64_t steps, int64_t max_noise_level) {
  FK_CHECK(steps >= 1, "ddim: steps must be at least 1, got ", steps);
  FK_CHECK(max_noise_level > steps, "ddim: ", steps, " steps over ", max_noise_level, " noise levels");
  DdimSchedule s;
  // Sigmoid schedule: alphas_cumprod(t) = (sigmoid(3) - sigmoid(6 t - 3)) / (sigmoid(3) - sigmoid(-3)),
  // normalised by its value at t = 0, t = i / T.
  const double start = -3, end = 3, v_start = sigmoid(start), v_end = sigmoid(end);
  const auto n = static_cast<size_t>(max_noise_level);
  std::vector<double> ac(n + 1);
  for (size_t i = 0; i <= n; ++i) {
    const double t = static_cast<double>(i) / static_cast<double>(max_noise_level);
    ac[i] = (-sigmoid(t * (end - start) + start) + v_end) / (v_end - v_start);
  }
  const double first = ac[0];
  float running = 1.f;
  s.alphas_cumprod.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const double beta = std::clamp(1.0 - (ac[i + 1] / first) / (ac[i] / first), 0.0, 0.999);
    running *= 1.f - static_cast<float>(beta);
    s.alphas_cumprod[i] = running;
  }
  // linspace(-1, max - 1, steps + 1) in float32, converted to integers toward zero.
  for (int64_t i = 0; i <= steps; ++i) {
    const float level = -1.f + static_cast<float>(max_noise_level) * static_cast<float>(i) / static_cast<float>(steps);
    s.levels.push_back(static_cast<int64_t>(level));
  }
  return s;
}

std::pair<double, double> DdimSchedule::step(int64_t from, int64_t to) const {
  FK_CHECK(from >= 0 && from < static_cast<int64_t>(alphas_cumprod.size()) &&
               to < static_cast<int64_t>(alphas_cumprod.size()),
           "ddim: noise levels ", from, " -> ", to, " outside the schedule's ", alphas_cumprod.size());
  const double a = alphas_cumprod[static_cast<size_t>(from)];
  const double a_next = to < 0 ? 1.0 : alphas_cumprod[static_cast<size_t>(to)];
  // x0 = sqrt(a) x - sqrt(1 - a) v;  eps = sqrt(1 - a) x + sqrt(a) v;
  // x' = sqrt(a') x0 + sqrt(1 - a') eps.
  const double c_sample = std::sqrt(a_next * a) + std::sqrt((1 - a_next) * (1 - a));
  const double c_output = std::sqrt((1 - a_next) * a) - std::sqrt(a_next * (1 - a));
  return {c_sample, c_output};
}

}  // namespace fk::serving::denoise
