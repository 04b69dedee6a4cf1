#include "ops/ssm/causal_conv1d_reference.h"

#include <cmath>
#include <vector>

#include "fk/element.h"
#include "ops/common/validate.h"
#include "ops/ssm/conv_state.h"
#include "ops/ssm/varlen_validate.h"

namespace fk::ops {
namespace {

// u / (1 + exp(-u)) in double; exp overflows to inf for u < -709 and the quotient is then
// -0, the limit.
double silu(double u) { return u / (1.0 + std::exp(-u)); }

// One channel of one sequence. `u` holds the W - 1 inputs before the sequence (its initial
// state, or zeros) followed by its L new inputs; out_at(i, value) receives output i < L.
template <class Emit>
void convolve_channel(const std::vector<double>& u, const TensorView& weight, const TensorView& bias, int64_t d,
                      bool act, Emit out_at) {
  const int64_t W = weight.shape[1];
  const int64_t L = static_cast<int64_t>(u.size()) - (W - 1);
  const double b = arg_present(bias) ? get(bias, d) : 0.0;
  for (int64_t i = 0; i < L; ++i) {
    double acc = b;
    for (int64_t k = 0; k < W; ++k) acc += get(weight, d, k) * u[static_cast<size_t>(i + k)];
    out_at(i, act ? silu(acc) : acc);
  }
}

}  // namespace

void causal_conv1d_reference(const CausalConv1dArgs& a) {
  constexpr const char* op = CausalConv1dArgs::kName;
  const int64_t T = a.x.shape[0], D = a.x.shape[1], W = a.weight.shape[1];
  const std::vector<int64_t> cu = read_cu_seqlens(op, "cu_seqlens", a.cu_seqlens, T);
  const std::vector<int64_t> slot = read_state_indices(op, a.state_indices, a.conv_state.shape[0]);
  const bool any_initial = arg_present(a.has_initial_state);
  std::vector<double> u;
  for (size_t b = 0; b + 1 < cu.size(); ++b) {
    const int64_t start = cu[b], L = cu[b + 1] - cu[b], s = slot[b];
    const bool padding = s < 0;
    const bool from_state = !padding && any_initial && get_index(a.has_initial_state, b) != 0;
    for (int64_t d = 0; d < D; ++d) {
      u.assign(static_cast<size_t>(W - 1 + L), 0.0);
      if (from_state)
        for (int64_t j = 0; j < W - 1; ++j) u[static_cast<size_t>(j)] = get(a.conv_state, s, d, j);
      for (int64_t i = 0; i < L; ++i) u[static_cast<size_t>(W - 1 + i)] = get(a.x, start + i, d);
      convolve_channel(u, a.weight, a.bias, d, a.silu != 0, [&](int64_t i, double v) { set(a.out, v, start + i, d); });
      // The newest W - 1 inputs, the initial state's included when L < W - 1.
      if (!padding)
        for (int64_t j = 0; j < W - 1; ++j) set(a.conv_state, u[static_cast<size_t>(L + j)], s, d, j);
    }
  }
}

void causal_conv1d_update_reference(const CausalConv1dUpdateArgs& a) {
  constexpr const char* op = CausalConv1dUpdateArgs::kName;
  const bool multi = a.x.rank == 3;
  const int64_t B = a.x.shape[0], N = multi ? a.x.shape[1] : 1, D = a.x.shape[a.x.rank - 1], W = a.weight.shape[1];
  const std::vector<int64_t> slot = read_state_indices(op, a.state_indices, a.conv_state.shape[0]);
  auto x_at = [&](int64_t b, int64_t n, int64_t d) { return multi ? get(a.x, b, n, d) : get(a.x, b, d); };
  std::vector<double> u;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t s = slot[static_cast<size_t>(b)];
    for (int64_t d = 0; d < D; ++d) {
      u.assign(static_cast<size_t>(W - 1 + N), 0.0);
      if (s >= 0)
        for (int64_t j = 0; j < W - 1; ++j) u[static_cast<size_t>(j)] = get(a.conv_state, s, d, j);
      for (int64_t n = 0; n < N; ++n) u[static_cast<size_t>(W - 1 + n)] = x_at(b, n, d);
      convolve_channel(u, a.weight, a.bias, d, a.silu != 0, [&](int64_t n, double v) {
        if (multi) set(a.out, v, b, n, d);
        else set(a.out, v, b, d);
      });
      if (s >= 0)
        for (int64_t j = 0; j < W - 1; ++j) set(a.conv_state, u[static_cast<size_t>(N + j)], s, d, j);
    }
  }
}

}  // namespace fk::ops
