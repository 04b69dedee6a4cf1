// The linear op's CPU reference (linear_reference.h): double accumulation over K, tiled
// so that each loaded value serves several products.
#include "ops/linear/linear_reference.h"

#include <algorithm>
#include <vector>

#include "fk/element.h"
#include "ops/linear/linear_validate.h"

namespace fk::ops {
namespace {

// Rows of a [rows, cols] matrix as doubles, packed (row stride = cols).
std::vector<double> to_doubles(const TensorView& m) {
  const int64_t rows = m.shape[0], cols = m.shape[1];
  std::vector<double> d(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) d[static_cast<size_t>(r * cols + c)] = get(m, r, c);
  return d;
}

// acc[i][j] += dot(x row i, w row j) for an MR x NR tile; both operands are K-contiguous,
// and the tile reuses each loaded x and w value MR or NR times.
template <int MR, int NR>
void dot_tile(const double* x, const double* w, int64_t K, double (&acc)[4][4]) {
  for (int64_t k = 0; k < K; ++k) {
    double wv[NR];
    for (int j = 0; j < NR; ++j) wv[j] = w[j * K + k];
    for (int i = 0; i < MR; ++i) {
      const double xv = x[i * K + k];
      for (int j = 0; j < NR; ++j) acc[i][j] += xv * wv[j];
    }
  }
}

void dot_edge(const double* x, const double* w, int64_t K, int mr, int nr, double (&acc)[4][4]) {
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += x[i * K + k] * w[j * K + k];
      acc[i][j] = s;
    }
}

}  // namespace

void linear_reference(const LinearArgs& a) {
  const int64_t M = a.input.shape[0], K = a.input.shape[1], N = a.weight.shape[0];
  if (M == 0 || N == 0) return;
  const std::vector<double> x = to_doubles(a.input), w = to_doubles(a.weight);
  double scale = 1;
  if (a.input.dtype == DType::f8e4m3fn) scale = get(a.scale_a, 0) * get(a.scale_b, 0);
  const bool has_bias = arg_present(a.bias);
  constexpr int kTile = 4;
  for (int64_t m0 = 0; m0 < M; m0 += kTile) {
    const int mr = static_cast<int>(std::min<int64_t>(kTile, M - m0));
    for (int64_t n0 = 0; n0 < N; n0 += kTile) {
      const int nr = static_cast<int>(std::min<int64_t>(kTile, N - n0));
      double acc[4][4] = {};
      const double* xt = x.data() + m0 * K;
      const double* wt = w.data() + n0 * K;
      if (mr == kTile && nr == kTile) dot_tile<kTile, kTile>(xt, wt, K, acc);
      else dot_edge(xt, wt, K, mr, nr, acc);
      for (int i = 0; i < mr; ++i)
        for (int j = 0; j < nr; ++j) {
          const double b = has_bias ? get(a.bias, n0 + j) : 0.0;
          set(a.out, scale * acc[i][j] + b, m0 + i, n0 + j);
        }
    }
  }
}

}  // namespace fk::ops
