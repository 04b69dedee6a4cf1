#include "models/vision/yolov10/yolov10_weights.h"

#include <cmath>
#include <cstring>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/random.h"
#include "fk/status.h"
#include "models/checkpoint_tensor.h"
#include "ops/conv/conv_weights.h"

namespace fk::models::vision {
namespace {

namespace fs = std::filesystem;

std::string str(int64_t v) { return std::to_string(v); }

// Walks the modules of the config in state-dict order. Without a source it only records
// the declarations; with one it reads, folds and converts each call's weights.
class Walker {
 public:
  Walker(const Yolov10Config& c, const Yolov10TensorSource* source, DType dtype, Device device)
      : c_(c), source_(source), dtype_(dtype), device_(device) {}

  std::vector<TensorDecl> decls;

  Yolov10Weights run() {
    Yolov10Weights w;
    for (const Yolov10Layer& l : c_.layers) w.layers.push_back(layer(l));
    return w;
  }

 private:
  const Yolov10Config& c_;
  const Yolov10TensorSource* source_;
  DType dtype_;
  Device device_;
  bool reading_ = true;  // false while declaring the training-only one-to-many head

  bool loads() const { return source_ != nullptr && reading_; }

  Tensor get(const std::string& name, const Shape& shape) {
    decls.push_back({name, shape, DType::f32, reading_ ? "" : "training only (one-to-many head); not read"});
    if (!loads()) return Tensor{};
    Tensor t = (*source_)(name, shape);
    expect_source_tensor(t, name, shape, "yolov10");
    return t;
  }

  // BatchNorm folded into the bias-less conv before it: f32 OHWI weight and bias.
  std::pair<Tensor, Tensor> folded(const std::string& p, int64_t c1, int64_t c2, int k, int g) {
    const Tensor w = get(p + "conv.weight", {c2, c1 / g, k, k});
    const Tensor gamma = get(p + "bn.weight", {c2}), beta = get(p + "bn.bias", {c2});
    const Tensor mean = get(p + "bn.running_mean", {c2}), var = get(p + "bn.running_var", {c2});
    if (!loads()) return {};
    Tensor wf = Tensor::empty(w.shape(), DType::f32), bf = Tensor::empty({c2}, DType::f32);
    ops::fold_batch_norm(w, TensorView{}, gamma, beta, mean, var, c_.bn_eps, wf, bf);
    Tensor ohwi = Tensor::empty({c2, k, k, c1 / g}, DType::f32);
    ops::conv_weight_from_oihw(wf, ohwi);
    return {ohwi, bf};
  }

  Yolov10Conv call(std::pair<Tensor, Tensor> wb, int64_t c1, int64_t c2, int k, int s, int g, bool act) {
    Yolov10Conv cv;
    cv.c_in = c1, cv.c_out = c2, cv.kernel = k, cv.stride = s, cv.pad = k / 2, cv.groups = g, cv.silu = act;
    if (wb.first.defined()) {
      cv.weight = f32_to_model(wb.first, dtype_, device_);
      cv.bias = f32_to_model(wb.second, dtype_, device_);
    }
    return cv;
  }

  // Conv: conv (no bias) + BatchNorm + SiLU (or none), "same" padding.
  Yolov10Conv conv(const std::string& p, int64_t c1, int64_t c2, int k, int s = 1, int64_t g = 1, bool act = true) {
    return call(folded(p, c1, c2, k, static_cast<int>(g)), c1, c2, k, s, static_cast<int>(g), act);
  }

  // nn.Conv2d with a bias (the head's last 1x1 convs).
  Yolov10Conv plain(const std::string& p, int64_t c1, int64_t c2) {
    const Tensor w = get(p + "weight", {c2, c1, 1, 1}), b = get(p + "bias", {c2});
    if (!loads()) return call({}, c1, c2, 1, 1, 1, false);
    Tensor ohwi = Tensor::empty({c2, 1, 1, c1}, DType::f32);
    ops::conv_weight_from_oihw(w, ohwi);
    return call({ohwi, b}, c1, c2, 1, 1, 1, false);
  }

  // RepVGGDW: SiLU(Conv7x7dw(x) + Conv3x3dw(x)), both without activation: one 7x7 filter.
  Yolov10Conv repvggdw(const std::string& p, int64_t ch) {
    auto large = folded(p + "conv.", ch, ch, 7, static_cast<int>(ch));
    auto small = folded(p + "conv1.", ch, ch, 3, static_cast<int>(ch));
    if (!loads()) return call({}, ch, ch, 7, 1, static_cast<int>(ch), true);
    Tensor w = Tensor::empty({ch, 7, 7, 1}, DType::f32), b = Tensor::empty({ch}, DType::f32);
    ops::fuse_parallel_convs(large.first, large.second, small.first, small.second, w, b);
    return call({w, b}, ch, ch, 7, 1, static_cast<int>(ch), true);
  }

  // PSA's qkv Conv (no activation), re-laid out as the header describes.
  Yolov10Conv qkv(const std::string& p, const Yolov10Attention& a) {
    const int64_t per_head = 2 * a.key_dim + a.head_dim, total = a.heads * per_head, dim = a.dim;
    auto wb = folded(p, dim, total, 1, 1);
    const int64_t out = 3 * a.heads * a.head_dim;
    if (!loads()) return call({}, dim, out, 1, 1, 1, false);
    Tensor w = Tensor::zeros({out, 1, 1, dim}, DType::f32), b = Tensor::zeros({out}, DType::f32);
    auto move_row = [&](int64_t from, int64_t to) {
      std::memcpy(w.data_as<float>() + to * dim, wb.first.data_as<float>() + from * dim,
                  static_cast<size_t>(dim) * sizeof(float));
      b.data_as<float>()[to] = wb.second.data_as<float>()[from];
    };
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t base = h * per_head;
      for (int64_t d = 0; d < a.key_dim; ++d) {
        move_row(base + d, h * a.head_dim + d);                                      // q
        move_row(base + a.key_dim + d, a.heads * a.head_dim + h * a.head_dim + d);   // k
      }
      for (int64_t d = 0; d < a.head_dim; ++d)
        move_row(base + 2 * a.key_dim + d, 2 * a.heads * a.head_dim + h * a.head_dim + d);  // v
    }
    return call({w, b}, dim, out, 1, 1, 1, false);
  }

  Yolov10LayerWeights layer(const Yolov10Layer& l) {
    const std::string p = "model." + str(l.index) + ".";
    const int64_t c1 = l.c_in, c2 = l.c_out;
    Yolov10LayerWeights w;
    auto& v = w.convs;
    switch (l.kind) {
      case Yolov10Block::conv:
        v.push_back(conv(p, c1, c2, l.kernel, l.stride));
        break;
      case Yolov10Block::scdown:
        v.push_back(conv(p + "cv1.", c1, c2, 1));
        v.push_back(conv(p + "cv2.", c2, c2, l.kernel, l.stride, c2, false));
        break;
      case Yolov10Block::sppf: {
        const int64_t h = c1 / 2;
        v.push_back(conv(p + "cv1.", c1, h, 1));
        v.push_back(conv(p + "cv2.", 4 * h, c2, 1));
        break;
      }
      case Yolov10Block::c2f:
      case Yolov10Block::c2f_cib: {
        const int64_t h = c2 / 2;
        v.push_back(conv(p + "cv1.", c1, 2 * h, 1));
        v.push_back(conv(p + "cv2.", (2 + l.repeats) * h, c2, 1));
        for (int64_t j = 0; j < l.repeats; ++j) {
          const std::string m = p + "m." + str(j) + ".";
          if (l.kind == Yolov10Block::c2f) {
            v.push_back(conv(m + "cv1.", h, h, 3));
            v.push_back(conv(m + "cv2.", h, h, 3));
          } else {
            v.push_back(conv(m + "cv1.0.", h, h, 3, 1, h));
            v.push_back(conv(m + "cv1.1.", h, 2 * h, 1));
            v.push_back(l.large_kernel ? repvggdw(m + "cv1.2.", 2 * h) : conv(m + "cv1.2.", 2 * h, 2 * h, 3, 1, 2 * h));
            v.push_back(conv(m + "cv1.3.", 2 * h, h, 1));
            v.push_back(conv(m + "cv1.4.", h, h, 3, 1, h));
          }
        }
        break;
      }
      case Yolov10Block::psa: {
        const Yolov10Attention a = yolov10_attention(c_);
        const int64_t h = a.dim;
        v.push_back(conv(p + "cv1.", c1, 2 * h, 1));
        v.push_back(conv(p + "cv2.", 2 * h, c1, 1));
        v.push_back(qkv(p + "attn.qkv.", a));
        v.push_back(conv(p + "attn.proj.", h, h, 1, 1, 1, false));
        v.push_back(conv(p + "attn.pe.", h, h, 3, 1, h, false));
        v.push_back(conv(p + "ffn.0.", h, 2 * h, 1));
        v.push_back(conv(p + "ffn.1.", 2 * h, h, 1, 1, 1, false));
        break;
      }
      case Yolov10Block::detect: {
        const std::vector<int64_t> ch = c_.detect_channels();
        const int64_t cb = c_.box_channels(), cc = c_.cls_channels();
        for (const char* head : {"one2one_", ""}) {
          reading_ = head[0] != '\0';
          for (size_t lv = 0; lv < ch.size(); ++lv) {
            const int64_t x = ch[lv];
            const std::string b = p + head + "cv2." + str(static_cast<int64_t>(lv)) + ".";
            const std::string s = p + head + "cv3." + str(static_cast<int64_t>(lv)) + ".";
            std::vector<Yolov10Conv> level = {
                conv(b + "0.", x, cb, 3), conv(b + "1.", cb, cb, 3), plain(b + "2.", cb, 4 * c_.reg_max),
                conv(s + "0.0.", x, x, 3, 1, x), conv(s + "0.1.", x, cc, 1), conv(s + "1.0.", cc, cc, 3, 1, cc),
                conv(s + "1.1.", cc, cc, 1), plain(s + "2.", cc, c_.nc)};
            if (reading_) v.insert(v.end(), level.begin(), level.end());
          }
        }
        reading_ = false;
        get(p + "dfl.conv.weight", {1, c_.reg_max, 1, 1});
        reading_ = true;
        break;
      }
      case Yolov10Block::upsample:
      case Yolov10Block::concat:
        break;
    }
    return w;
  }
};

}  // namespace

Yolov10Attention yolov10_attention(const Yolov10Config& c) {
  Yolov10Attention a;
  a.dim = c.layers[10].c_in / 2;  // PSA's attention runs over half of its channels
  a.heads = a.dim / 64;
  a.head_dim = a.dim / a.heads;
  a.key_dim = a.head_dim / 2;  // attn_ratio 0.5 (head_dim is even: a multiple of 8)
  return a;
}

std::vector<TensorDecl> yolov10_weight_decls(const Yolov10Config& c) {
  Walker w(c, nullptr, DType::f32, Device::cpu());
  w.run();
  return std::move(w.decls);
}

Yolov10Weights build_yolov10_weights(const Yolov10Config& c, const Yolov10TensorSource& source, DType dtype,
                                     Device device) {
  Walker w(c, &source, dtype, device);
  return w.run();
}

Yolov10Weights load_yolov10_weights(const Yolov10Config& c, const fs::path& path, DType dtype, Device device) {
  const safetensors::Checkpoint ckpt = safetensors::Checkpoint::open(path);
  const Yolov10TensorSource source = [&](const std::string& name, const Shape& shape) {
    return read_f32_tensor(ckpt, name, shape, "a YOLOv10 model of this config");
  };
  return build_yolov10_weights(c, source, dtype, device);
}

std::map<std::string, Tensor> random_yolov10_state_dict(const Yolov10Config& c, uint64_t seed) {
  std::map<std::string, Tensor> sd;
  uint64_t offset = 0;
  auto ends_with = [](const std::string& s, const char* tail) {
    const size_t n = std::strlen(tail);
    return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
  };
  for (const TensorDecl& d : yolov10_weight_decls(c)) {
    Tensor t = Tensor::empty(d.shape, DType::f32);
    if (ends_with(d.name, "dfl.conv.weight")) {
      for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = static_cast<float>(i);
    } else if (ends_with(d.name, "bn.weight")) {
      fill_uniform(t, seed, offset, 0.8f, 1.2f);
    } else if (ends_with(d.name, "running_var")) {
      fill_uniform(t, seed, offset, 0.5f, 1.5f);
    } else if (d.shape.size() == 4) {
      const double fan_in = static_cast<double>(d.shape[1] * d.shape[2] * d.shape[3]);
      const float a = static_cast<float>(std::sqrt(5.4 / fan_in));
      fill_uniform(t, seed, offset, -a, a);
    } else {  // BatchNorm shifts and means, conv biases
      fill_uniform(t, seed, offset, -0.1f, 0.1f);
    }
    ++offset;
    sd.emplace(d.name, std::move(t));
  }
  return sd;
}

Yolov10Weights random_yolov10_weights(const Yolov10Config& c, uint64_t seed, DType dtype, Device device) {
  const std::map<std::string, Tensor> sd = random_yolov10_state_dict(c, seed);
  const Yolov10TensorSource source = [&](const std::string& name, const Shape&) { return sd.at(name); };
  return build_yolov10_weights(c, source, dtype, device);
}

}  // namespace fk::models::vision
