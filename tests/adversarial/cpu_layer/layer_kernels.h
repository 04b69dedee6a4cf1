// Shared by the CPU layer candidates (decoder_layer; gpt_oss_layer in ../cpu_oss_layer/,
// moe_layer in ../cpu_moe_layer/): the whole layer written for the test with
// loops of its own (no engine code): float math, each activation rounded to the model
// dtype where an engine stores it. Each candidate file shows only what it does differently.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fk/dtype_convert.h"
#include "fk/ops/gpt_oss_layer.h"
#include "fk/ops/layer.h"
#include "fk/ops/moe_layer.h"

namespace adv_layer {

using fk::DType;
using fk::TensorView;

inline float load(const TensorView& v, int64_t offset) {
  const char* p = static_cast<const char*>(v.data) + offset * v.element_size();
  if (v.dtype == DType::f32) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
  uint16_t b;
  std::memcpy(&b, p, 2);
  return v.dtype == DType::bf16 ? fk::bf16_to_float(b) : fk::f16_to_float(b);
}

inline void store(const TensorView& v, int64_t offset, float x) {
  char* p = static_cast<char*>(v.data) + offset * v.element_size();
  if (v.dtype == DType::f32) {
    std::memcpy(p, &x, 4);
    return;
  }
  const uint16_t b = v.dtype == DType::bf16 ? fk::float_to_bf16(x) : fk::float_to_f16(x);
  std::memcpy(p, &b, 2);
}

inline float round_to(DType t, float x) {
  if (t == DType::bf16) return fk::bf16_to_float(fk::float_to_bf16(x));
  if (t == DType::f16) return fk::f16_to_float(fk::float_to_f16(x));
  return x;
}

inline int64_t load_index(const TensorView& v, int64_t i) {
  const char* p = static_cast<const char*>(v.data);
  if (v.dtype == DType::i32) {
    int32_t x;
    std::memcpy(&x, p + i * v.strides[0] * 4, 4);
    return x;
  }
  int64_t x;
  std::memcpy(&x, p + i * v.strides[0] * 8, 8);
  return x;
}

inline bool present(const TensorView& v) { return v.data != nullptr && v.numel() > 0; }

// rows[t, :] of a [T, N] matrix view as floats.
inline std::vector<float> read_matrix(const TensorView& v) {
  const int64_t R = v.shape[0], C = v.shape[1];
  std::vector<float> out(static_cast<size_t>(R * C));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) out[r * C + c] = load(v, r * v.strides[0] + c * v.strides[1]);
  return out;
}

inline std::vector<float> read_vector(const TensorView& v) {
  std::vector<float> out(static_cast<size_t>(v.shape[0]));
  for (int64_t i = 0; i < v.shape[0]; ++i) out[i] = load(v, i * v.strides[0]);
  return out;
}

inline void round_all(std::vector<float>& x, DType t) {
  for (float& f : x) f = round_to(t, f);
}

// out[m, :] = x[m, :] * rsqrt(mean(x[m, :]^2) + eps) * w, the squares summed in double: a
// residual stream that grew through huge weights (an edge round's) squares past float.
inline std::vector<float> rms_norm(const std::vector<float>& x, int64_t M, int64_t K, const std::vector<float>& w,
                                   float eps) {
  std::vector<float> out(x.size());
  for (int64_t m = 0; m < M; ++m) {
    double ss = 0;
    for (int64_t k = 0; k < K; ++k) ss += static_cast<double>(x[m * K + k]) * x[m * K + k];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(K) + eps);
    for (int64_t k = 0; k < K; ++k) out[m * K + k] = static_cast<float>(x[m * K + k] * inv * w[k]);
  }
  return out;
}

// out[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]) for a [N, K] weight view.
inline std::vector<float> gemm(const std::vector<float>& x, int64_t M, const TensorView& W, const TensorView& bias) {
  const int64_t N = W.shape[0], K = W.shape[1];
  const std::vector<float> w = read_matrix(W);
  const std::vector<float> b = present(bias) ? read_vector(bias) : std::vector<float>(static_cast<size_t>(N), 0.f);
  std::vector<float> out(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      float acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += x[m * K + k] * w[n * K + k];
      out[m * N + n] = acc + b[n];
    }
  return out;
}

// One head (D floats) normalised per head (with w) and rotated at position p.
inline void norm_rope_head(float* x, int64_t D, const std::vector<float>* w, float eps, const TensorView& cos_sin,
                           int64_t p, fk::ops::RopeStyle style) {
  if (w) {
    float ss = 0;
    for (int64_t d = 0; d < D; ++d) ss += x[d] * x[d];
    const float inv = 1.f / std::sqrt(ss / static_cast<float>(D) + eps);
    for (int64_t d = 0; d < D; ++d) x[d] = x[d] * inv * (*w)[d];
  }
  const int64_t half = cos_sin.shape[1] / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float c = load(cos_sin, p * cos_sin.strides[0] + i), s = load(cos_sin, p * cos_sin.strides[0] + half + i);
    const int64_t i1 = style == fk::ops::RopeStyle::gptj ? 2 * i : i;
    const int64_t i2 = style == fk::ops::RopeStyle::gptj ? 2 * i + 1 : i + half;
    const float x1 = x[i1], x2 = x[i2];
    x[i1] = x1 * c - x2 * s;
    x[i2] = x2 * c + x1 * s;
  }
}

inline int64_t cache_offset(const TensorView& cache, int64_t page, int64_t slot, int64_t head) {
  return page * cache.strides[0] + slot * cache.strides[1] + head * cache.strides[2];
}

// The stream s (hidden + residual, rounded; hidden alone on the first layer) and, from its
// input norm, the rounded qkv rows with q and k normalised (where the layer has q/k norms)
// and rotated, k and v written into the cache. Any layer op with DecoderLayerArgs' fields.
template <class Args>
void stream_and_qkv(const Args& a, std::vector<float>& s, std::vector<float>& qkv, const TensorView& qkv_bias,
                    const TensorView& q_norm, const TensorView& k_norm) {
  const DType dt = a.input_norm.dtype;
  const int64_t T = a.hidden.shape[0], H = a.hidden.shape[1];
  const int64_t Hq = a.num_heads, Hk = a.num_kv_heads, D = a.head_dim;
  const int64_t qkv_width = (Hq + 2 * Hk) * D, S = a.k_cache.shape[1];
  s = read_matrix(a.hidden);
  if (!a.first_layer) {
    const std::vector<float> r = read_matrix(a.residual);
    for (size_t i = 0; i < s.size(); ++i) s[i] = round_to(dt, s[i] + r[i]);
  }
  std::vector<float> x = rms_norm(s, T, H, read_vector(a.input_norm), a.eps);
  round_all(x, dt);
  qkv = gemm(x, T, a.qkv_weight, qkv_bias);
  round_all(qkv, dt);

  const bool qk_norm = present(q_norm);
  const std::vector<float> qw = qk_norm ? read_vector(q_norm) : std::vector<float>();
  const std::vector<float> kw = qk_norm ? read_vector(k_norm) : std::vector<float>();
  for (int64_t t = 0; t < T; ++t) {
    const int64_t p = load_index(a.positions, t);
    for (int64_t h = 0; h < Hq + Hk; ++h) {
      float* head = &qkv[t * qkv_width + h * D];
      norm_rope_head(head, D, qk_norm ? (h < Hq ? &qw : &kw) : nullptr, a.eps, a.cos_sin_cache, p, a.rope_style);
      for (int64_t d = 0; d < D; ++d) head[d] = round_to(dt, head[d]);
    }
    const int64_t slot = load_index(a.slot_mapping, t);
    if (slot < 0) continue;
    for (int64_t h = 0; h < Hk; ++h)
      for (int64_t d = 0; d < D; ++d) {
        const int64_t off = cache_offset(a.k_cache, slot / S, slot % S, h) + d;
        store(a.k_cache, off, qkv[t * qkv_width + (Hq + h) * D + d]);
        store(a.v_cache, off, qkv[t * qkv_width + (Hq + Hk + h) * D + d]);
      }
  }
}

// Paged causal attention of each sequence's query tokens (the last of its KV), rounded;
// with sinks (gpt-oss), each head's sink logit joins the softmax denominator. The logits
// and the softmax are in double: keys and queries of the dtype's largest magnitudes (an
// edge round's) have dot products beyond float's range.
template <class Args>
std::vector<float> paged_attention(const Args& a, const std::vector<float>& qkv, const float* sinks = nullptr) {
  const DType dt = a.input_norm.dtype;
  const int64_t T = a.hidden.shape[0], Hq = a.num_heads, Hk = a.num_kv_heads, D = a.head_dim, group = Hq / Hk;
  const int64_t qkv_width = (Hq + 2 * Hk) * D, S = a.k_cache.shape[1];
  std::vector<float> attn(static_cast<size_t>(T * Hq * D), 0.f);
  std::vector<double> logits, o(static_cast<size_t>(D));
  const int64_t B = a.kv_indptr_host.shape[0] - 1;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t q0 = load_index(a.qo_indptr_host, b), q1 = load_index(a.qo_indptr_host, b + 1);
    const int64_t p0 = load_index(a.kv_indptr_host, b), p1 = load_index(a.kv_indptr_host, b + 1);
    const int64_t kv_len = p1 == p0 ? 0 : (p1 - p0 - 1) * S + load_index(a.kv_last_page_len_host, b);
    for (int64_t t = q0; t < q1; ++t) {
      const int64_t pos = kv_len - (q1 - t);
      const int64_t lo = a.window_left >= 0 ? std::max<int64_t>(0, pos - a.window_left) : 0;
      logits.assign(static_cast<size_t>(pos + 1), 0.0);
      for (int64_t h = 0; h < Hq; ++h) {
        const float* q = &qkv[t * qkv_width + h * D];
        double mx = -INFINITY;
        for (int64_t j = lo; j <= pos; ++j) {
          const int64_t page = load_index(a.kv_indices, p0 + j / S);
          const int64_t off = cache_offset(a.k_cache, page, j % S, h / group);
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(q[d]) * load(a.k_cache, off + d);
          logits[j] = dot * a.sm_scale;
          mx = std::max(mx, logits[j]);
        }
        double sum = sinks ? std::exp(sinks[h] - mx) : 0.0;
        std::fill(o.begin(), o.end(), 0.0);
        for (int64_t j = lo; j <= pos; ++j) {
          const double e = std::exp(logits[j] - mx);
          sum += e;
          const int64_t page = load_index(a.kv_indices, p0 + j / S);
          const int64_t off = cache_offset(a.v_cache, page, j % S, h / group);
          for (int64_t d = 0; d < D; ++d) o[d] += e * load(a.v_cache, off + d);
        }
        for (int64_t d = 0; d < D; ++d) attn[(t * Hq + h) * D + d] = round_to(dt, static_cast<float>(o[d] / sum));
      }
    }
  }
  return attn;
}

// The layer. add_residual = false leaves out the residual add after the attention (the
// stream becomes o alone): a wrong layer for the harness to catch.
inline void decoder_layer(const fk::ops::DecoderLayerArgs& a, bool add_residual = true) {
  const DType dt = a.input_norm.dtype;
  const int64_t T = a.hidden.shape[0], H = a.hidden.shape[1];
  if (T == 0) return;
  std::vector<float> s, qkv;
  stream_and_qkv(a, s, qkv, a.qkv_bias, a.q_norm, a.k_norm);
  const std::vector<float> attn = paged_attention(a, qkv);

  // Output projection, the residual add, the MLP.
  std::vector<float> proj = gemm(attn, T, a.o_weight, TensorView{});
  round_all(proj, dt);
  for (size_t i = 0; i < s.size(); ++i) s[i] = round_to(dt, add_residual ? proj[i] + s[i] : proj[i]);
  std::vector<float> x = rms_norm(s, T, H, read_vector(a.post_attention_norm), a.eps);
  round_all(x, dt);
  std::vector<float> gate_up = gemm(x, T, a.gate_up_weight, TensorView{});
  round_all(gate_up, dt);
  const int64_t I = a.down_weight.shape[1];
  std::vector<float> act(static_cast<size_t>(T * I));
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < I; ++i) {
      const float g = gate_up[t * 2 * I + i], u = gate_up[t * 2 * I + I + i];
      act[t * I + i] = round_to(dt, g / (1.f + std::exp(-g)) * u);
    }
  const std::vector<float> out = gemm(act, T, a.down_weight, TensorView{});
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      store(a.residual, t * a.residual.strides[0] + h * a.residual.strides[1], s[t * H + h]);
      store(a.hidden, t * a.hidden.strides[0] + h * a.hidden.strides[1], out[t * H + h]);
    }
}

// The routed experts of a MoE layer on the normalised rows x [T, H] into `out`: each
// token's k experts by `score` (largest first), weighted by softmax(logits) over the k
// (renormalize) or over all E, each expert's output from `expert(e, x_row, y_row)`.
template <class Score, class Expert>
std::vector<float> routed_experts(const std::vector<float>& x, const std::vector<float>& logits, int64_t T, int64_t H,
                                  int64_t E, int64_t k, bool renormalize, Score score, Expert expert) {
  std::vector<float> out(static_cast<size_t>(T * H), 0.f), y(static_cast<size_t>(H));
  std::vector<int64_t> order(static_cast<size_t>(E));
  for (int64_t t = 0; t < T; ++t) {
    const float* l = &logits[t * E];
    for (int64_t e = 0; e < E; ++e) order[e] = e;
    std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) { return score(l, p) > score(l, q); });
    const float top = *std::max_element(l, l + E);
    float sum = 0;
    for (int64_t j = 0; j < (renormalize ? k : E); ++j) sum += std::exp(l[order[j]] - top);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t e = order[j];
      const float weight = std::exp(l[e] - top) / sum;
      expert(e, &x[t * H], y.data());
      for (int64_t h = 0; h < H; ++h) out[t * H + h] += weight * y[h];
    }
  }
  return out;
}

template <class Args>
void store_stream(const Args& a, const std::vector<float>& s, const std::vector<float>& out) {
  const int64_t T = a.hidden.shape[0], H = a.hidden.shape[1];
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < H; ++h) {
      store(a.residual, t * a.residual.strides[0] + h * a.residual.strides[1], s[t * H + h]);
      store(a.hidden, t * a.hidden.strides[0] + h * a.hidden.strides[1], out[t * H + h]);
    }
}

// gpt-oss's layer: attention with sinks, o with its bias, the router, softmax over the top
// k, the biased experts with the clamped SwiGLU. route_with_bias = false routes on the
// logits without the router's bias (the experts' weights still from the biased logits): a
// wrong layer for the harness to catch.
inline void gpt_oss_layer(const fk::ops::GptOssLayerArgs& a, bool route_with_bias = true) {
  const DType dt = a.input_norm.dtype;
  const int64_t T = a.hidden.shape[0], H = a.hidden.shape[1];
  if (T == 0) return;
  std::vector<float> s, qkv;
  stream_and_qkv(a, s, qkv, a.qkv_bias, TensorView{}, TensorView{});
  const std::vector<float> attn = paged_attention(a, qkv, static_cast<const float*>(a.sinks.data));
  std::vector<float> proj = gemm(attn, T, a.o_weight, a.o_bias);
  round_all(proj, dt);
  for (size_t i = 0; i < s.size(); ++i) s[i] = round_to(dt, proj[i] + s[i]);
  std::vector<float> x = rms_norm(s, T, H, read_vector(a.post_attention_norm), a.eps);
  round_all(x, dt);
  std::vector<float> logits = gemm(x, T, a.router_weight, a.router_bias);
  round_all(logits, dt);
  const std::vector<float> bias = read_vector(a.router_bias);

  const int64_t E = a.router_weight.shape[0], k = a.topk_ids.shape[1], I = a.w13.shape[1] / 2;
  std::vector<float> act(static_cast<size_t>(I));
  const auto score = [&](const float* l, int64_t e) { return route_with_bias ? l[e] : l[e] - bias[e]; };
  const auto expert = [&](int64_t e, const float* xt, float* y) {
    for (int64_t i = 0; i < I; ++i) {
      float g = load(a.w13_bias, e * 2 * I + i), u = load(a.w13_bias, e * 2 * I + I + i);
      for (int64_t h = 0; h < H; ++h) {
        g += load(a.w13, (e * 2 * I + i) * H + h) * xt[h];
        u += load(a.w13, (e * 2 * I + I + i) * H + h) * xt[h];
      }
      g = std::min(g, a.swiglu_limit);
      u = std::clamp(u, -a.swiglu_limit, a.swiglu_limit);
      act[i] = (u + 1.f) * g / (1.f + std::exp(-a.swiglu_alpha * g));
    }
    for (int64_t h = 0; h < H; ++h) {
      y[h] = load(a.w2_bias, e * H + h);
      for (int64_t i = 0; i < I; ++i) y[h] += load(a.w2, (e * H + h) * I + i) * act[i];
    }
  };
  store_stream(a, s, routed_experts(x, logits, T, H, E, k, /*renormalize=*/true, score, expert));
}

// A Mixtral / Qwen3-MoE layer: decoder_layer's attention (q/k norms where given), the
// router, softmax top-k, the SwiGLU experts (act rounded to the dtype, as the engine's
// experts store it). renormalize_as_given = false always renormalises the top-k weights:
// wrong for a layer (OLMoE's) that takes the plain softmax probabilities.
inline void moe_layer(const fk::ops::MoeLayerArgs& a, bool renormalize_as_given = true) {
  const DType dt = a.input_norm.dtype;
  const int64_t T = a.hidden.shape[0], H = a.hidden.shape[1];
  if (T == 0) return;
  std::vector<float> s, qkv;
  stream_and_qkv(a, s, qkv, a.qkv_bias, a.q_norm, a.k_norm);
  const std::vector<float> attn = paged_attention(a, qkv);
  std::vector<float> proj = gemm(attn, T, a.o_weight, TensorView{});
  round_all(proj, dt);
  for (size_t i = 0; i < s.size(); ++i) s[i] = round_to(dt, proj[i] + s[i]);
  std::vector<float> x = rms_norm(s, T, H, read_vector(a.post_attention_norm), a.eps);
  round_all(x, dt);
  std::vector<float> logits = gemm(x, T, a.router_weight, TensorView{});
  round_all(logits, dt);

  const int64_t E = a.router_weight.shape[0], k = a.topk_ids.shape[1], I = a.w13.shape[1] / 2;
  std::vector<float> act(static_cast<size_t>(I));
  const auto score = [](const float* l, int64_t e) { return l[e]; };
  const auto expert = [&](int64_t e, const float* xt, float* y) {
    for (int64_t i = 0; i < I; ++i) {
      float g = 0, u = 0;
      for (int64_t h = 0; h < H; ++h) {
        g += load(a.w13, (e * 2 * I + i) * H + h) * xt[h];
        u += load(a.w13, (e * 2 * I + I + i) * H + h) * xt[h];
      }
      act[i] = round_to(dt, round_to(dt, g) / (1.f + std::exp(-round_to(dt, g))) * round_to(dt, u));
    }
    for (int64_t h = 0; h < H; ++h) {
      y[h] = 0;
      for (int64_t i = 0; i < I; ++i) y[h] += load(a.w2, (e * H + h) * I + i) * act[i];
    }
  };
  const bool renormalize = renormalize_as_given ? a.renormalize != 0 : true;
  store_stream(a, s, routed_experts(x, logits, T, H, E, k, renormalize, score, expert));
}

}  // namespace adv_layer
