#include "ops/dit/dit_defs.h"

#include <cmath>

#include "fk/element.h"
#include "ops/activation/activation_defs.h"

namespace fk::ops {

DitShape dit_shape(const Json& w, const char* op) {
  const ActShape s = act_shape(w, op, "hidden");
  const int64_t batch = wl_int(w, "batch", 1);
  FK_CHECK(batch >= 1 && s.tokens % batch == 0, op, " workload needs batch >= 1 dividing tokens, got ", w.dump());
  return {s.tokens, s.cols, batch, s.dtype};
}

std::vector<Json> dit_test_workloads() {
  std::vector<Json> ws = activation_test_workloads("hidden");
  ws.push_back({{"tokens", 6}, {"hidden", 64}, {"batch", 2}});
  ws.push_back({{"tokens", 9}, {"hidden", 40}, {"batch", 3}, {"dtype", "f32"}});
  ws.push_back({{"tokens", 4}, {"hidden", 3072}, {"batch", 4}, {"dtype", "f16"}});
  return ws;
}

std::vector<Json> flux_bench_workloads() {
  std::vector<Json> ws;
  for (int64_t t : {4096, 512, 4608}) ws.push_back({{"tokens", t}, {"hidden", 3072}});
  return ws;
}

void modulate_rows(const TensorView& x, const TensorView& out, const TensorView& mod, int64_t b, int64_t shift_col,
                   int64_t scale_col, int64_t h, double eps) {
  for (int64_t t = 0; t < x.shape[0]; ++t) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < h; ++j) mean += get(x, t, j);
    mean /= static_cast<double>(h);
    for (int64_t j = 0; j < h; ++j) var += (get(x, t, j) - mean) * (get(x, t, j) - mean);
    const double rstd = 1 / std::sqrt(var / static_cast<double>(h) + eps);
    for (int64_t j = 0; j < h; ++j)
      set(out, (get(x, t, j) - mean) * rstd * (1 + get(mod, b, scale_col + j)) + get(mod, b, shift_col + j), t, j);
  }
}

}  // namespace fk::ops
