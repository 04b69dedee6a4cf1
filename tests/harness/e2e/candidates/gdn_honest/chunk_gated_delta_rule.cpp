// expect: PASSED
// A plain CPU gated delta rule (token by token, accumulated in double): inside Qwen3-Next's
// engine it replaces the chunked form of every gated-DeltaNet layer's prefill, reached
// through gdn_layer's parts, and must agree with the baseline token for token.
// gdn_leak/ compiles this file with LEAK_STATE_INTO_FRESH_SEQUENCES; gdn_decode_stale/ as
// the recurrent (decode) form with DROP_FINAL_STATE.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "fk/dtype_convert.h"
#include "fk/ops/gated_delta.h"

namespace {

double load(fk::DType t, const void* p) {
  if (t == fk::DType::f32) return *static_cast<const float*>(p);
  uint16_t b;
  std::memcpy(&b, p, 2);
  return t == fk::DType::bf16 ? fk::bf16_to_float(b) : fk::f16_to_float(b);
}
void store(fk::DType t, void* p, double x) {
  const float f = static_cast<float>(x);
  if (t == fk::DType::f32) {
    std::memcpy(p, &f, 4);
    return;
  }
  const uint16_t b = t == fk::DType::bf16 ? fk::float_to_bf16(f) : fk::float_to_f16(f);
  std::memcpy(p, &b, 2);
}
// Element (i, j, k) of a rank-3 view, or (i, j) of a rank-2 one.
const char* at(const fk::TensorView& v, int64_t i, int64_t j, int64_t k = 0) {
  return static_cast<const char*>(v.data) +
         (i * v.strides[0] + j * v.strides[1] + (v.rank > 2 ? k * v.strides[2] : 0)) * v.element_size();
}
int32_t index(const fk::TensorView& v, int64_t i) { return static_cast<const int32_t*>(v.data)[i]; }

// q or k of token t, key head h, L2-normalised when the op asks for it.
std::vector<double> key_row(const fk::TensorView& x, int64_t t, int64_t h, bool l2norm) {
  const int64_t K = x.shape[2];
  std::vector<double> r(static_cast<size_t>(K));
  double ss = 0;
  for (int64_t i = 0; i < K; ++i) ss += (r[static_cast<size_t>(i)] = load(x.dtype, at(x, t, h, i))) * r[static_cast<size_t>(i)];
  if (l2norm)
    for (double& e : r) e /= std::sqrt(ss + 1e-6);
  return r;
}

fk_status run(const void* raw, void*) {
  const auto& a = *static_cast<const fk::ops::GatedDeltaRuleArgs*>(raw);
  const int64_t N = a.cu_seqlens.shape[0] - 1, Hk = a.q.shape[1], K = a.q.shape[2], Hv = a.v.shape[1],
                V = a.v.shape[2];
  const bool flags = a.has_initial_state.data != nullptr && a.has_initial_state.shape[0] > 0;
  const double scale = a.scale > 0 ? a.scale : 1.0 / std::sqrt(static_cast<double>(K));
  std::vector<double> S(static_cast<size_t>(K * V), 0.0), kv(static_cast<size_t>(V));
  for (int64_t h = 0; h < Hv; ++h) {
    const int64_t kh = h / (Hv / Hk);
    for (int64_t n = 0; n < N; ++n) {
      float* slot = static_cast<float*>(a.state.data) + index(a.state_indices, n) * a.state.strides[0] + h * K * V;
      if (!flags || index(a.has_initial_state, n) != 0) {
        for (int64_t i = 0; i < K * V; ++i) S[static_cast<size_t>(i)] = slot[i];
      } else {
#ifdef LEAK_STATE_INTO_FRESH_SEQUENCES
        // The bug: a fresh sequence carries on from the state the sequence packed before it
        // in the batch ended with, as a kernel that ignores the sequence boundaries would.
        if (n == 0) std::fill(S.begin(), S.end(), 0.0);
#else
        std::fill(S.begin(), S.end(), 0.0);
#endif
      }
      for (int64_t t = index(a.cu_seqlens, n); t < index(a.cu_seqlens, n + 1); ++t) {
        const std::vector<double> q = key_row(a.q, t, kh, a.use_qk_l2norm_in_kernel != 0),
                                  k = key_row(a.k, t, kh, a.use_qk_l2norm_in_kernel != 0);
        const double decay = std::exp(load(a.g.dtype, at(a.g, t, h))), beta = load(a.beta.dtype, at(a.beta, t, h));
        for (double& s : S) s *= decay;
        for (int64_t j = 0; j < V; ++j) {
          double sk = 0;
          for (int64_t i = 0; i < K; ++i) sk += S[static_cast<size_t>(i * V + j)] * k[static_cast<size_t>(i)];
          kv[static_cast<size_t>(j)] = beta * (load(a.v.dtype, at(a.v, t, h, j)) - sk);
        }
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < V; ++j) S[static_cast<size_t>(i * V + j)] += k[static_cast<size_t>(i)] * kv[static_cast<size_t>(j)];
        for (int64_t j = 0; j < V; ++j) {
          double o = 0;
          for (int64_t i = 0; i < K; ++i) o += S[static_cast<size_t>(i * V + j)] * q[static_cast<size_t>(i)];
          store(a.o.dtype, const_cast<char*>(at(a.o, t, h, j)), scale * o);
        }
      }
#ifndef DROP_FINAL_STATE
      for (int64_t i = 0; i < K * V; ++i) slot[i] = static_cast<float>(S[static_cast<size_t>(i)]);
#endif
    }
  }
  return FK_OK;
}

}  // namespace

#ifdef EXPORT_AS_RECURRENT
FK_EXPORT_CANDIDATE(fused_recurrent_gated_delta_rule, run)
#else
FK_EXPORT_CANDIDATE(chunk_gated_delta_rule, run)
#endif
