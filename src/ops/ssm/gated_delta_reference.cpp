// The gated delta rule's host implementations: the double-precision token loop (the
// reference) and the chunked algorithm in a chosen precision (the CUDA baseline's algebra).
#include "ops/ssm/gated_delta_reference.h"

#include <algorithm>

#include "fk/element.h"

namespace fk::ops {
namespace {

// The sequence's initial state for value head h ([K * V], index k * V + v).
template <class Real>
void load_state(const GatedDeltaRuleArgs& a, const GatedDeltaDims& d, int64_t n, int64_t h, std::vector<Real>& s) {
  s.assign(static_cast<size_t>(d.dk * d.dv), Real(0));
  const bool from_slot = !arg_present(a.has_initial_state) || get_index(a.has_initial_state, n) != 0;
  if (!from_slot) return;
  const int64_t slot = get_index(a.state_indices, n);
  for (int64_t i = 0; i < d.dk; ++i)
    for (int64_t j = 0; j < d.dv; ++j) s[static_cast<size_t>(i * d.dv + j)] = static_cast<Real>(get(a.state, slot, h, i, j));
}

template <class Real>
void store_state(const GatedDeltaRuleArgs& a, const GatedDeltaDims& d, int64_t n, int64_t h, const std::vector<Real>& s) {
  const int64_t slot = get_index(a.state_indices, n);
  for (int64_t i = 0; i < d.dk; ++i)
    for (int64_t j = 0; j < d.dv; ++j) set(a.state, static_cast<double>(s[static_cast<size_t>(i * d.dv + j)]), slot, h, i, j);
}

}  // namespace

void gated_delta_load_qk(const GatedDeltaRuleArgs& a, const GatedDeltaDims& d, int64_t t, int64_t h,
                         std::vector<double>& q, std::vector<double>& k) {
  const int64_t hk = h / (d.hv / d.hk);
  q.resize(static_cast<size_t>(d.dk));
  k.resize(static_cast<size_t>(d.dk));
  double qq = 0, kk = 0;
  for (int64_t i = 0; i < d.dk; ++i) {
    q[static_cast<size_t>(i)] = get(a.q, t, hk, i);
    k[static_cast<size_t>(i)] = get(a.k, t, hk, i);
    qq += q[static_cast<size_t>(i)] * q[static_cast<size_t>(i)];
    kk += k[static_cast<size_t>(i)] * k[static_cast<size_t>(i)];
  }
  const double qn = a.use_qk_l2norm_in_kernel ? 1.0 / std::sqrt(qq + 1e-6) : 1.0;
  const double kn = a.use_qk_l2norm_in_kernel ? 1.0 / std::sqrt(kk + 1e-6) : 1.0;
  const double scale = gated_delta_scale(a);
  for (int64_t i = 0; i < d.dk; ++i) q[static_cast<size_t>(i)] *= qn * scale, k[static_cast<size_t>(i)] *= kn;
}

void gated_delta_rule_reference(const GatedDeltaRuleArgs& a, const GatedDeltaDims& d) {
  std::vector<double> s, q, k, delta(static_cast<size_t>(d.dv));
  const auto K = static_cast<size_t>(d.dk), V = static_cast<size_t>(d.dv);
  for (int64_t n = 0; n < d.seqs; ++n) {
    const int64_t bos = get_index(a.cu_seqlens, n), eos = get_index(a.cu_seqlens, n + 1);
    for (int64_t h = 0; h < d.hv; ++h) {
      load_state(a, d, n, h, s);
      for (int64_t t = bos; t < eos; ++t) {
        gated_delta_load_qk(a, d, t, h, q, k);
        const double decay = std::exp(get(a.g, t, h)), beta = get(a.beta, t, h);
        for (double& x : s) x *= decay;
        for (size_t j = 0; j < V; ++j) {
          double kv = 0;  // (S^T k)[j]
          for (size_t i = 0; i < K; ++i) kv += s[i * V + j] * k[i];
          delta[j] = beta * (get(a.v, t, h, static_cast<int64_t>(j)) - kv);
        }
        for (size_t i = 0; i < K; ++i)
          for (size_t j = 0; j < V; ++j) s[i * V + j] += k[i] * delta[j];
        for (size_t j = 0; j < V; ++j) {
          double o = 0;
          for (size_t i = 0; i < K; ++i) o += s[i * V + j] * q[i];
          set(a.o, o, t, h, static_cast<int64_t>(j));
        }
      }
      store_state(a, d, n, h, s);
    }
  }
}

template <class Real>
void gated_delta_rule_chunked_host(const GatedDeltaRuleArgs& a, const GatedDeltaDims& d) {
  constexpr int64_t C = kGatedDeltaChunk;
  const auto K = static_cast<size_t>(d.dk), V = static_cast<size_t>(d.dv);
  std::vector<Real> s, qc(C * K), kc(C * K), vc(C * V), w(C * K), u(C * V), gc(C), bt(C), tm(C * C), pm(C * C),
      row(C), onew(V);
  std::vector<double> q, k;
  for (int64_t n = 0; n < d.seqs; ++n) {
    const int64_t bos = get_index(a.cu_seqlens, n), eos = get_index(a.cu_seqlens, n + 1);
    for (int64_t h = 0; h < d.hv; ++h) {
      load_state(a, d, n, h, s);
      for (int64_t c0 = bos; c0 < eos; c0 += C) {
        const auto c = static_cast<size_t>(std::min(C, eos - c0));
        // The chunk's rows: normalised q (scaled) and k, v, beta, and the cumulative decay.
        Real acc = 0;
        for (size_t i = 0; i < c; ++i) {
          const int64_t t = c0 + static_cast<int64_t>(i);
          gated_delta_load_qk(a, d, t, h, q, k);
          for (size_t x = 0; x < K; ++x) qc[i * K + x] = static_cast<Real>(q[x]), kc[i * K + x] = static_cast<Real>(k[x]);
          for (size_t y = 0; y < V; ++y) vc[i * V + y] = static_cast<Real>(get(a.v, t, h, static_cast<int64_t>(y)));
          bt[i] = static_cast<Real>(get(a.beta, t, h));
          acc += static_cast<Real>(get(a.g, t, h));
          gc[i] = acc;
        }
        // L (strictly lower) and P (lower with the diagonal).
        for (size_t i = 0; i < c; ++i)
          for (size_t j = 0; j < c; ++j) {
            Real kk = 0, qk = 0;
            for (size_t x = 0; x < K; ++x) kk += kc[i * K + x] * kc[j * K + x], qk += qc[i * K + x] * kc[j * K + x];
            const Real decay = j <= i ? std::exp(gc[i] - gc[j]) : Real(0);
            tm[i * C + j] = j < i ? bt[i] * kk * decay : Real(0);
            pm[i * C + j] = qk * decay;
          }
        // T = (I + L)^-1 by forward substitution, row by row (rows above i are final):
        // T[i][j] = -sum_{m=j}^{i-1} L[i][m] T[m][j] for j < i, T[i][i] = 1.
        for (size_t i = 0; i < c; ++i) {
          for (size_t j = 0; j < i; ++j) {
            Real sum = tm[i * C + j];  // m = j: T[j][j] = 1
            for (size_t m = j + 1; m < i; ++m) sum += tm[i * C + m] * tm[m * C + j];
            row[j] = -sum;
          }
          for (size_t j = 0; j < i; ++j) tm[i * C + j] = row[j];
          tm[i * C + i] = 1;
        }
        // u = T (beta v), w = T (beta exp(gc) k).
        for (size_t i = 0; i < c; ++i) {
          for (size_t y = 0; y < V; ++y) {
            Real sum = 0;
            for (size_t j = 0; j <= i; ++j) sum += tm[i * C + j] * bt[j] * vc[j * V + y];
            u[i * V + y] = sum;
          }
          for (size_t x = 0; x < K; ++x) {
            Real sum = 0;
            for (size_t j = 0; j <= i; ++j) sum += tm[i * C + j] * bt[j] * std::exp(gc[j]) * kc[j * K + x];
            w[i * K + x] = sum;
          }
        }
        // v_new = u - w S (into u).
        for (size_t i = 0; i < c; ++i)
          for (size_t y = 0; y < V; ++y) {
            Real sum = 0;
            for (size_t x = 0; x < K; ++x) sum += w[i * K + x] * s[x * V + y];
            u[i * V + y] -= sum;
          }
        // o = exp(gc) (q S) + P v_new.
        for (size_t i = 0; i < c; ++i) {
          for (size_t y = 0; y < V; ++y) {
            Real inter = 0, intra = 0;
            for (size_t x = 0; x < K; ++x) inter += qc[i * K + x] * s[x * V + y];
            for (size_t j = 0; j <= i; ++j) intra += pm[i * C + j] * u[j * V + y];
            onew[y] = std::exp(gc[i]) * inter + intra;
          }
          for (size_t y = 0; y < V; ++y)
            set(a.o, static_cast<double>(onew[y]), c0 + static_cast<int64_t>(i), h, static_cast<int64_t>(y));
        }
        // S = exp(gc_last) S + (k exp(gc_last - gc))^T v_new.
        const Real last = gc[c - 1];
        for (size_t x = 0; x < K; ++x)
          for (size_t y = 0; y < V; ++y) {
            Real sum = std::exp(last) * s[x * V + y];
            for (size_t j = 0; j < c; ++j) sum += kc[j * K + x] * std::exp(last - gc[j]) * u[j * V + y];
            s[x * V + y] = sum;
          }
      }
      store_state(a, d, n, h, s);
    }
  }
}

template void gated_delta_rule_chunked_host<float>(const GatedDeltaRuleArgs&, const GatedDeltaDims&);
template void gated_delta_rule_chunked_host<double>(const GatedDeltaRuleArgs&, const GatedDeltaDims&);

}  // namespace fk::ops
