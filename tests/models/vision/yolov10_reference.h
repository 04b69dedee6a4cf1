// An independent YOLOv10 forward for tests: NCHW in double, straight from the upstream
// state dict (unfolded BatchNorm in eval mode, the upstream qkv channel order, explicit
// concatenations), module by module as the paper's architecture describes them. It shares
// nothing with the engine's forward but the layer table of the config.
#pragma once
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "models/vision/yolov10/yolov10_config.h"

namespace fk::models::vision::test {

struct Fmap {
  int64_t c = 0, h = 0, w = 0;
  std::vector<double> v;
  Fmap() = default;
  Fmap(int64_t c_, int64_t h_, int64_t w_) : c(c_), h(h_), w(w_), v(static_cast<size_t>(c_ * h_ * w_), 0.0) {}
  double& at(int64_t ch, int64_t y, int64_t x) { return v[static_cast<size_t>((ch * h + y) * w + x)]; }
  double at(int64_t ch, int64_t y, int64_t x) const { return v[static_cast<size_t>((ch * h + y) * w + x)]; }
};

inline Fmap cat(const std::vector<Fmap>& xs) {
  int64_t c = 0;
  for (const Fmap& x : xs) c += x.c;
  Fmap o(c, xs[0].h, xs[0].w);
  size_t at = 0;
  for (const Fmap& x : xs) {
    std::copy(x.v.begin(), x.v.end(), o.v.begin() + static_cast<std::ptrdiff_t>(at));
    at += x.v.size();
  }
  return o;
}

inline Fmap channels(const Fmap& x, int64_t c0, int64_t n) {
  Fmap o(n, x.h, x.w);
  std::copy(x.v.begin() + c0 * x.h * x.w, x.v.begin() + (c0 + n) * x.h * x.w, o.v.begin());
  return o;
}

inline Fmap add(Fmap a, const Fmap& b) {
  for (size_t i = 0; i < a.v.size(); ++i) a.v[i] += b.v[i];
  return a;
}

class Yolov10Reference {
 public:
  Yolov10Reference(const Yolov10Config& c, const std::map<std::string, Tensor>& sd) : c_(c), sd_(sd) {}

  // One image (NCHW [3, S, S]) to the raw head output [A, 4 * reg_max + nc].
  std::vector<double> forward(const Fmap& image) const {
    std::vector<Fmap> y;
    for (const Yolov10Layer& l : c_.layers) {
      const std::string p = "model." + std::to_string(l.index) + ".";
      const Fmap& x = l.index == 0 ? image : y[static_cast<size_t>(l.from[0])];
      switch (l.kind) {
        case Yolov10Block::conv: y.push_back(conv_bn(p, x, l.stride, 1, true)); break;
        case Yolov10Block::scdown:
          y.push_back(conv_bn(p + "cv2.", conv_bn(p + "cv1.", x, 1, 1, true), l.stride, l.c_out, false));
          break;
        case Yolov10Block::c2f:
        case Yolov10Block::c2f_cib: y.push_back(c2f(p, l, x)); break;
        case Yolov10Block::sppf: {
          std::vector<Fmap> parts = {conv_bn(p + "cv1.", x, 1, 1, true)};
          for (int i = 0; i < 3; ++i) parts.push_back(max_pool(parts.back(), l.kernel));
          y.push_back(conv_bn(p + "cv2.", cat(parts), 1, 1, true));
          break;
        }
        case Yolov10Block::psa: y.push_back(psa(p, x)); break;
        case Yolov10Block::upsample: {
          Fmap o(x.c, x.h * 2, x.w * 2);
          for (int64_t ch = 0; ch < o.c; ++ch)
            for (int64_t yy = 0; yy < o.h; ++yy)
              for (int64_t xx = 0; xx < o.w; ++xx) o.at(ch, yy, xx) = x.at(ch, yy / 2, xx / 2);
          y.push_back(o);
          break;
        }
        case Yolov10Block::concat: {
          std::vector<Fmap> parts;
          for (int f : l.from) parts.push_back(y[static_cast<size_t>(f)]);
          y.push_back(cat(parts));
          break;
        }
        case Yolov10Block::detect: return detect(p, l, y);
      }
    }
    return {};
  }

 private:
  const Yolov10Config& c_;
  const std::map<std::string, Tensor>& sd_;

  const Tensor& t(const std::string& name) const { return sd_.at(name); }

  // torch.nn.functional.conv2d with "same" padding (k / 2).
  Fmap conv(const Fmap& x, const Tensor& w, const Tensor* bias, int stride, int64_t groups) const {
    const int64_t k_out = w.size(0), cg = w.size(1), k = w.size(2), pad = k / 2;
    const int64_t ho = (x.h + 2 * pad - k) / stride + 1, wo = (x.w + 2 * pad - k) / stride + 1, kg = k_out / groups;
    Fmap o(k_out, ho, wo);
    const float* wd = w.data_as<float>();
    for (int64_t oc = 0; oc < k_out; ++oc) {
      const int64_t g = oc / kg;
      for (int64_t yy = 0; yy < ho; ++yy)
        for (int64_t xx = 0; xx < wo; ++xx) {
          double s = bias ? bias->data_as<float>()[oc] : 0.0;
          for (int64_t ci = 0; ci < cg; ++ci)
            for (int64_t r = 0; r < k; ++r) {
              const int64_t iy = yy * stride - pad + r;
              if (iy < 0 || iy >= x.h) continue;
              for (int64_t q = 0; q < k; ++q) {
                const int64_t ix = xx * stride - pad + q;
                if (ix < 0 || ix >= x.w) continue;
                s += static_cast<double>(wd[((oc * cg + ci) * k + r) * k + q]) * x.at(g * cg + ci, iy, ix);
              }
            }
          o.at(oc, yy, xx) = s;
        }
    }
    return o;
  }

  // Conv: conv (no bias), BatchNorm2d in eval mode, SiLU.
  Fmap conv_bn(const std::string& p, const Fmap& x, int stride, int64_t groups, bool act) const {
    Fmap o = conv(x, t(p + "conv.weight"), nullptr, stride, groups);
    const float *g = t(p + "bn.weight").data_as<float>(), *b = t(p + "bn.bias").data_as<float>();
    const float *m = t(p + "bn.running_mean").data_as<float>(), *v = t(p + "bn.running_var").data_as<float>();
    for (int64_t ch = 0; ch < o.c; ++ch)
      for (int64_t i = 0; i < o.h * o.w; ++i) {
        double& z = o.v[static_cast<size_t>(ch * o.h * o.w + i)];
        z = (z - m[ch]) / std::sqrt(static_cast<double>(v[ch]) + c_.bn_eps) * g[ch] + b[ch];
        if (act) z = z / (1.0 + std::exp(-z));
      }
    return o;
  }

  Fmap max_pool(const Fmap& x, int k) const {
    Fmap o(x.c, x.h, x.w);
    const int64_t pad = k / 2;
    for (int64_t ch = 0; ch < x.c; ++ch)
      for (int64_t yy = 0; yy < x.h; ++yy)
        for (int64_t xx = 0; xx < x.w; ++xx) {
          double m = -INFINITY;
          for (int64_t r = yy - pad; r <= yy + pad; ++r)
            for (int64_t q = xx - pad; q <= xx + pad; ++q)
              if (r >= 0 && r < x.h && q >= 0 && q < x.w) m = std::max(m, x.at(ch, r, q));
          o.at(ch, yy, xx) = m;
        }
    return o;
  }

  Fmap c2f(const std::string& p, const Yolov10Layer& l, const Fmap& x) const {
    const Fmap y0 = conv_bn(p + "cv1.", x, 1, 1, true);
    const int64_t h = y0.c / 2;
    std::vector<Fmap> ys = {channels(y0, 0, h), channels(y0, h, h)};
    for (int64_t j = 0; j < l.repeats; ++j) {
      const std::string m = p + "m." + std::to_string(j) + ".";
      const Fmap& in = ys.back();
      Fmap o;
      if (l.kind == Yolov10Block::c2f) {
        o = conv_bn(m + "cv2.", conv_bn(m + "cv1.", in, 1, 1, true), 1, 1, true);
      } else {  // CIB
        Fmap z = conv_bn(m + "cv1.0.", in, 1, h, true);
        z = conv_bn(m + "cv1.1.", z, 1, 1, true);
        if (l.large_kernel) {  // RepVGGDW: SiLU(dw7x7(z) + dw3x3(z)), both BN'd, no activation
          Fmap s = add(conv_bn(m + "cv1.2.conv.", z, 1, z.c, false), conv_bn(m + "cv1.2.conv1.", z, 1, z.c, false));
          for (double& e : s.v) e = e / (1.0 + std::exp(-e));
          z = s;
        } else {
          z = conv_bn(m + "cv1.2.", z, 1, z.c, true);
        }
        z = conv_bn(m + "cv1.3.", z, 1, 1, true);
        o = conv_bn(m + "cv1.4.", z, 1, h, true);
      }
      ys.push_back(l.shortcut ? add(o, in) : o);
    }
    return conv_bn(p + "cv2.", cat(ys), 1, 1, true);
  }

  Fmap psa(const std::string& p, const Fmap& x) const {
    const Fmap ab = conv_bn(p + "cv1.", x, 1, 1, true);
    const int64_t c = ab.c / 2, heads = c / 64, hd = c / heads, kd = hd / 2, n = x.h * x.w;
    const Fmap a = channels(ab, 0, c);
    Fmap b = channels(ab, c, c);
    const Fmap qkv = conv_bn(p + "attn.qkv.", b, 1, 1, false);  // per head [q kd, k kd, v hd]
    Fmap att(c, x.h, x.w), v(c, x.h, x.w);
    const double scale = 1.0 / std::sqrt(static_cast<double>(kd));
    for (int64_t hh = 0; hh < heads; ++hh) {
      const int64_t base = hh * (2 * kd + hd) * n;
      auto q = [&](int64_t d, int64_t i) { return qkv.v[static_cast<size_t>(base + d * n + i)]; };
      auto k = [&](int64_t d, int64_t j) { return qkv.v[static_cast<size_t>(base + (kd + d) * n + j)]; };
      auto vv = [&](int64_t d, int64_t j) { return qkv.v[static_cast<size_t>(base + (2 * kd + d) * n + j)]; };
      for (int64_t d = 0; d < hd; ++d)
        for (int64_t j = 0; j < n; ++j) v.v[static_cast<size_t>((hh * hd + d) * n + j)] = vv(d, j);
      for (int64_t i = 0; i < n; ++i) {
        std::vector<double> s(static_cast<size_t>(n));
        double top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < kd; ++d) dot += q(d, i) * k(d, j);
          s[static_cast<size_t>(j)] = dot * scale;
          top = std::max(top, dot * scale);
        }
        for (double& e : s) sum += (e = std::exp(e - top));
        for (int64_t d = 0; d < hd; ++d) {
          double o = 0;
          for (int64_t j = 0; j < n; ++j) o += vv(d, j) * s[static_cast<size_t>(j)] / sum;
          att.v[static_cast<size_t>((hh * hd + d) * n + i)] = o;
        }
      }
    }
    const Fmap pe = add(att, conv_bn(p + "attn.pe.", v, 1, c, false));
    b = add(b, conv_bn(p + "attn.proj.", pe, 1, 1, false));
    b = add(b, conv_bn(p + "ffn.1.", conv_bn(p + "ffn.0.", b, 1, 1, true), 1, 1, false));
    return conv_bn(p + "cv2.", cat({a, b}), 1, 1, true);
  }

  std::vector<double> detect(const std::string& p, const Yolov10Layer& l, const std::vector<Fmap>& y) const {
    std::vector<double> raw;
    for (size_t lv = 0; lv < l.from.size(); ++lv) {
      const Fmap& x = y[static_cast<size_t>(l.from[lv])];
      const std::string b = p + "one2one_cv2." + std::to_string(lv) + ".";
      const std::string s = p + "one2one_cv3." + std::to_string(lv) + ".";
      Fmap box = conv_bn(b + "1.", conv_bn(b + "0.", x, 1, 1, true), 1, 1, true);
      box = conv(box, t(b + "2.weight"), &t(b + "2.bias"), 1, 1);
      Fmap cls = conv_bn(s + "0.1.", conv_bn(s + "0.0.", x, 1, x.c, true), 1, 1, true);
      cls = conv_bn(s + "1.1.", conv_bn(s + "1.0.", cls, 1, cls.c, true), 1, 1, true);
      cls = conv(cls, t(s + "2.weight"), &t(s + "2.bias"), 1, 1);
      const Fmap both = cat({box, cls});
      for (int64_t i = 0; i < x.h * x.w; ++i)
        for (int64_t ch = 0; ch < both.c; ++ch) raw.push_back(both.v[static_cast<size_t>(ch * x.h * x.w + i)]);
    }
    return raw;
  }
};

}  // namespace fk::models::vision::test
