// A double-precision FLUX.1 transformer forward written straight from diffusers'
// FluxTransformer2DModel (not from the engine's model): separate q/k/v projections,
// explicit concatenations of [text; image], the rotation as diffusers' apply_rotary_emb
// writes it (x * cos + rotate(x) * sin over repeat-interleaved tables). The tests hold the
// engine's forward (every op through the registry, in bf16) to it. Weights and inputs are
// looked up by their upstream names; where diffusers rounds to the model dtype before the
// float math (the timestep and guidance, t.to(dtype) * 1000), `round` does the same.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/diffusion/flux/flux_config.h"

namespace fk::models::diffusion::test {

// A row-major [rows, cols] matrix of doubles.
struct Mat {
  int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Mat() = default;
  Mat(int64_t r, int64_t c) : rows(r), cols(c), v(static_cast<size_t>(r * c), 0.0) {}
  double& at(int64_t r, int64_t c) { return v[static_cast<size_t>(r * cols + c)]; }
  double at(int64_t r, int64_t c) const { return v[static_cast<size_t>(r * cols + c)]; }
};

using WeightMap = std::map<std::string, Mat>;  // [out, in] matrices; biases and norms as [1, n]

struct FluxReferenceInputs {
  int64_t batch = 1, text_len = 0, image_len = 0;
  Mat hidden_states;          // [B * Li, in_channels]
  Mat encoder_hidden_states;  // [B * Lt, joint_attention_dim]
  Mat pooled;                 // [B, pooled_projection_dim]
  std::vector<double> timestep, guidance;  // [B]
  Mat txt_ids, img_ids;       // [Lt, 3], [Li, 3]
};

class FluxReference {
 public:
  FluxReference(FluxConfig c, const WeightMap& w, std::function<double(double)> round) : c_(c), w_(w), round_(round) {}

  // The predicted flow, [B * Li, out_features].
  Mat forward(const FluxReferenceInputs& in) const {
    const int64_t lt = in.text_len, li = in.image_len, s = lt + li, h = c_.hidden();
    Mat out(in.batch * li, c_.out_features());
    const Mat rope = rope_angles(in);
    for (int64_t b = 0; b < in.batch; ++b) {
      // Conditioning.
      Mat temb = embedder(sinusoid(round_(round_(in.timestep[b]) * 1000)), "time_text_embed.timestep_embedder");
      if (c_.guidance_embeds)
        temb = add(temb, embedder(sinusoid(round_(round_(in.guidance[b]) * 1000)), "time_text_embed.guidance_embedder"));
      temb = add(temb, text_embedder(row_block(in.pooled, b, 1)));
      const Mat cond = map(temb, silu);
      Mat img = linear(row_block(in.hidden_states, b * li, li), "x_embedder");
      Mat txt = linear(row_block(in.encoder_hidden_states, b * lt, lt), "context_embedder");
      for (int64_t l = 0; l < c_.num_layers; ++l) {
        const std::string p = "transformer_blocks." + std::to_string(l) + ".";
        const Mat mi = linear(cond, p + "norm1.linear"), mc = linear(cond, p + "norm1_context.linear");
        const Mat ni = modulate(layer_norm(img), col(mi, 0, h), col(mi, 1, h));
        const Mat nc = modulate(layer_norm(txt), col(mc, 0, h), col(mc, 1, h));
        const Mat q = vcat(head_norm(linear(nc, p + "attn.add_q_proj"), p + "attn.norm_added_q"),
                           head_norm(linear(ni, p + "attn.to_q"), p + "attn.norm_q"));
        const Mat k = vcat(head_norm(linear(nc, p + "attn.add_k_proj"), p + "attn.norm_added_k"),
                           head_norm(linear(ni, p + "attn.to_k"), p + "attn.norm_k"));
        const Mat v = vcat(linear(nc, p + "attn.add_v_proj"), linear(ni, p + "attn.to_v"));
        const Mat a = attention(rotate(q, rope), rotate(k, rope), v);
        img = add(img, scale_rows(linear(row_block(a, lt, li), p + "attn.to_out.0"), col(mi, 2, h)));
        txt = add(txt, scale_rows(linear(row_block(a, 0, lt), p + "attn.to_add_out"), col(mc, 2, h)));
        img = add(img, scale_rows(ff(modulate(layer_norm(img), col(mi, 3, h), col(mi, 4, h)), p + "ff"), col(mi, 5, h)));
        txt = add(txt, scale_rows(ff(modulate(layer_norm(txt), col(mc, 3, h), col(mc, 4, h)), p + "ff_context"),
                                  col(mc, 5, h)));
      }
      Mat x = vcat(txt, img);
      for (int64_t l = 0; l < c_.num_single_layers; ++l) {
        const std::string p = "single_transformer_blocks." + std::to_string(l) + ".";
        const Mat m = linear(cond, p + "norm.linear");
        const Mat n = modulate(layer_norm(x), col(m, 0, h), col(m, 1, h));
        const Mat q = head_norm(linear(n, p + "attn.to_q"), p + "attn.norm_q");
        const Mat k = head_norm(linear(n, p + "attn.to_k"), p + "attn.norm_k");
        const Mat a = attention(rotate(q, rope), rotate(k, rope), linear(n, p + "attn.to_v"));
        const Mat mlp = map(linear(n, p + "proj_mlp"), gelu_tanh);
        x = add(x, scale_rows(linear(hcat(a, mlp), p + "proj_out"), col(m, 2, h)));
      }
      const Mat mo = linear(cond, "norm_out.linear");  // scale, shift
      const Mat y = linear(modulate(layer_norm(row_block(x, lt, li)), col(mo, 1, h), col(mo, 0, h)), "proj_out");
      for (int64_t r = 0; r < li; ++r)
        for (int64_t j = 0; j < y.cols; ++j) out.at(b * li + r, j) = y.at(r, j);
      (void)s;
    }
    return out;
  }

  static double silu(double x) { return x / (1 + std::exp(-x)); }
  static double gelu_tanh(double x) {
    return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }

 private:
  const Mat& weight(const std::string& name) const {
    auto it = w_.find(name);
    if (it == w_.end()) throw std::runtime_error("reference: no weight " + name);
    return it->second;
  }
  Mat linear(const Mat& x, const std::string& name) const {
    const Mat& w = weight(name + ".weight");
    const Mat& bias = weight(name + ".bias");
    Mat y(x.rows, w.rows);
    for (int64_t r = 0; r < x.rows; ++r)
      for (int64_t o = 0; o < w.rows; ++o) {
        double acc = bias.at(0, o);
        for (int64_t i = 0; i < x.cols; ++i) acc += x.at(r, i) * w.at(o, i);
        y.at(r, o) = acc;
      }
    return y;
  }
  Mat embedder(const Mat& x, const std::string& p) const {
    return linear(map(linear(x, p + ".linear_1"), silu), p + ".linear_2");
  }
  Mat text_embedder(const Mat& x) const {
    return linear(map(linear(x, "time_text_embed.text_embedder.linear_1"), silu), "time_text_embed.text_embedder.linear_2");
  }
  Mat ff(const Mat& x, const std::string& p) const {
    return linear(map(linear(x, p + ".net.0.proj"), gelu_tanh), p + ".net.2");
  }
  Mat sinusoid(double t) const {
    const int64_t half = c_.timestep_channels / 2;
    Mat m(1, 2 * half);
    for (int64_t k = 0; k < half; ++k) {
      const double f = std::exp(-std::log(10000.0) * k / static_cast<double>(half));
      m.at(0, k) = std::cos(t * f);  // flip_sin_to_cos: cos first
      m.at(0, half + k) = std::sin(t * f);
    }
    return m;
  }
  // [S, D] angles, each pair's angle repeated twice (repeat_interleave_real).
  Mat rope_angles(const FluxReferenceInputs& in) const {
    const Mat ids = vcat(in.txt_ids, in.img_ids);
    Mat a(ids.rows, c_.attention_head_dim);
    for (int64_t t = 0; t < ids.rows; ++t) {
      int64_t col = 0;
      for (int axis = 0; axis < 3; ++axis) {
        const int64_t dim = c_.axes_dims_rope[static_cast<size_t>(axis)];
        for (int64_t i = 0; i < dim; i += 2) {
          const double freq = 1.0 / std::pow(c_.rope_theta, static_cast<double>(i) / static_cast<double>(dim));
          a.at(t, col++) = ids.at(t, axis) * freq;
          a.at(t, col++) = ids.at(t, axis) * freq;
        }
      }
    }
    return a;
  }
  // x * cos + [-x1, x0, -x3, x2, ...] * sin per head.
  Mat rotate(const Mat& x, const Mat& angles) const {
    const int64_t d = c_.attention_head_dim;
    Mat y(x.rows, x.cols);
    for (int64_t t = 0; t < x.rows; ++t)
      for (int64_t j = 0; j < x.cols; ++j) {
        const int64_t e = j % d;
        const double rot = e % 2 == 0 ? -x.at(t, j + 1) : x.at(t, j - 1);
        y.at(t, j) = x.at(t, j) * std::cos(angles.at(t, e)) + rot * std::sin(angles.at(t, e));
      }
    return y;
  }
  Mat head_norm(const Mat& x, const std::string& name) const {
    const Mat& w = weight(name + ".weight");
    const int64_t d = c_.attention_head_dim;
    Mat y(x.rows, x.cols);
    for (int64_t t = 0; t < x.rows; ++t)
      for (int64_t h0 = 0; h0 < x.cols; h0 += d) {
        double ss = 0;
        for (int64_t e = 0; e < d; ++e) ss += x.at(t, h0 + e) * x.at(t, h0 + e);
        const double r = 1 / std::sqrt(ss / d + c_.norm_eps);
        for (int64_t e = 0; e < d; ++e) y.at(t, h0 + e) = x.at(t, h0 + e) * r * w.at(0, e);
      }
    return y;
  }
  Mat attention(const Mat& q, const Mat& k, const Mat& v) const {
    const int64_t d = c_.attention_head_dim;
    Mat o(q.rows, q.cols);
    std::vector<double> p(static_cast<size_t>(k.rows));
    for (int64_t h0 = 0; h0 < q.cols; h0 += d)
      for (int64_t i = 0; i < q.rows; ++i) {
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < k.rows; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += q.at(i, h0 + e) * k.at(j, h0 + e);
          p[static_cast<size_t>(j)] = dot / std::sqrt(static_cast<double>(d));
          mx = std::max(mx, p[static_cast<size_t>(j)]);
        }
        for (double& x : p) sum += (x = std::exp(x - mx));
        for (int64_t e = 0; e < d; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < k.rows; ++j) acc += p[static_cast<size_t>(j)] * v.at(j, h0 + e);
          o.at(i, h0 + e) = acc / sum;
        }
      }
    return o;
  }
  Mat layer_norm(const Mat& x) const {
    Mat y(x.rows, x.cols);
    for (int64_t t = 0; t < x.rows; ++t) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < x.cols; ++j) mean += x.at(t, j);
      mean /= x.cols;
      for (int64_t j = 0; j < x.cols; ++j) var += (x.at(t, j) - mean) * (x.at(t, j) - mean);
      var /= x.cols;
      for (int64_t j = 0; j < x.cols; ++j) y.at(t, j) = (x.at(t, j) - mean) / std::sqrt(var + c_.norm_eps);
    }
    return y;
  }
  static Mat modulate(const Mat& x, const Mat& shift, const Mat& scale) {
    Mat y(x.rows, x.cols);
    for (int64_t t = 0; t < x.rows; ++t)
      for (int64_t j = 0; j < x.cols; ++j) y.at(t, j) = x.at(t, j) * (1 + scale.at(0, j)) + shift.at(0, j);
    return y;
  }
  static Mat scale_rows(const Mat& x, const Mat& gate) {
    Mat y(x.rows, x.cols);
    for (int64_t t = 0; t < x.rows; ++t)
      for (int64_t j = 0; j < x.cols; ++j) y.at(t, j) = x.at(t, j) * gate.at(0, j);
    return y;
  }
  static Mat add(const Mat& a, const Mat& b) {
    Mat y = a;
    for (size_t i = 0; i < y.v.size(); ++i) y.v[i] += b.v[i];
    return y;
  }
  template <class F>
  static Mat map(const Mat& x, F f) {
    Mat y = x;
    for (double& e : y.v) e = f(e);
    return y;
  }
  static Mat col(const Mat& m, int64_t k, int64_t h) {  // chunk k of width h of a [1, n] row
    Mat y(1, h);
    for (int64_t j = 0; j < h; ++j) y.at(0, j) = m.at(0, k * h + j);
    return y;
  }
  static Mat row_block(const Mat& m, int64_t first, int64_t n) {
    Mat y(n, m.cols);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < m.cols; ++j) y.at(r, j) = m.at(first + r, j);
    return y;
  }
  static Mat vcat(const Mat& a, const Mat& b) {
    Mat y(a.rows + b.rows, a.cols);
    std::copy(a.v.begin(), a.v.end(), y.v.begin());
    std::copy(b.v.begin(), b.v.end(), y.v.begin() + static_cast<long>(a.v.size()));
    return y;
  }
  static Mat hcat(const Mat& a, const Mat& b) {
    Mat y(a.rows, a.cols + b.cols);
    for (int64_t r = 0; r < a.rows; ++r) {
      for (int64_t j = 0; j < a.cols; ++j) y.at(r, j) = a.at(r, j);
      for (int64_t j = 0; j < b.cols; ++j) y.at(r, a.cols + j) = b.at(r, j);
    }
    return y;
  }

  FluxConfig c_;
  const WeightMap& w_;
  std::function<double(double)> round_;
};

}  // namespace fk::models::diffusion::test
