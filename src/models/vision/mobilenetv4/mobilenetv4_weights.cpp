#include "models/vision/mobilenetv4/mobilenetv4_weights.h"

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
using K = MobileNetV4BlockKind;

// Walks the model in state-dict order. Without a source it only records the declarations;
// with one it reads, folds and converts each conv's weights.
class MobileNetV4Walker {
 public:
  MobileNetV4Walker(const MobileNetV4Config& c, const MobileNetV4TensorSource* source, DType dtype, Device device)
      : c_(c), source_(source), dtype_(dtype), device_(device) {}

  std::vector<TensorDecl> decls;

  MobileNetV4Weights run() {
    MobileNetV4Weights w;
    w.stem = conv("conv_stem.weight", "bn1.", 3, c_.stem_channels, 3, 2, 1, true);
    for (const MobileNetV4Block& b : c_.blocks) {
      std::vector<MobileNetV4Conv> v;
      const std::string& p = b.prefix;
      if (b.kind == K::conv_bn_act) {
        v.push_back(conv(p + "conv.weight", p + "bn1.", b.c_in, b.c_out, b.kernel, b.stride, 1, true));
      } else if (b.kind == K::edge_residual) {
        v.push_back(conv(p + "conv_exp.weight", p + "bn1.", b.c_in, b.mid, b.kernel, b.stride, 1, true));
        v.push_back(conv(p + "conv_pwl.weight", p + "bn2.", b.mid, b.c_out, 1, 1, 1, false));
      } else {
        const int start_stride = b.dw_mid > 0 ? 1 : b.stride;
        if (b.dw_start > 0)
          v.push_back(conv(p + "dw_start.conv.weight", p + "dw_start.bn.", b.c_in, b.c_in, b.dw_start, start_stride,
                           b.c_in, false));
        v.push_back(conv(p + "pw_exp.conv.weight", p + "pw_exp.bn.", b.c_in, b.mid, 1, 1, 1, true));
        if (b.dw_mid > 0)
          v.push_back(conv(p + "dw_mid.conv.weight", p + "dw_mid.bn.", b.mid, b.mid, b.dw_mid, b.stride, b.mid, true));
        v.push_back(conv(p + "pw_proj.conv.weight", p + "pw_proj.bn.", b.mid, b.c_out, 1, 1, 1, false));
      }
      w.blocks.push_back(std::move(v));
    }
    w.head = conv("conv_head.weight", "norm_head.", c_.last_channels(), c_.num_features, 1, 1, 1, true);
    const Tensor cw = get("classifier.weight", {c_.num_classes, c_.num_features});
    const Tensor cb = get("classifier.bias", {c_.num_classes});
    if (source_ != nullptr) {
      w.classifier_weight = f32_to_model(cw, dtype_, device_);
      w.classifier_bias = f32_to_model(cb, dtype_, device_);
    }
    return w;
  }

 private:
  const MobileNetV4Config& c_;
  const MobileNetV4TensorSource* source_;
  DType dtype_;
  Device device_;

  Tensor get(const std::string& name, const Shape& shape) {
    decls.push_back({name, shape, DType::f32, ""});
    if (source_ == nullptr) return Tensor{};
    Tensor t = (*source_)(name, shape);
    expect_source_tensor(t, name, shape, "mobilenetv4");
    return t;
  }

  // A bias-less conv and the BatchNorm after it, folded: OHWI weight and bias.
  MobileNetV4Conv conv(const std::string& weight, const std::string& bn, int64_t c1, int64_t c2, int k, int s,
                       int64_t g, bool relu) {
    MobileNetV4Conv cv;
    cv.c_in = c1, cv.c_out = c2, cv.kernel = k, cv.stride = s, cv.pad = k / 2;
    cv.groups = static_cast<int>(g), cv.relu = relu;
    const Tensor w = get(weight, {c2, c1 / g, k, k});
    const Tensor gamma = get(bn + "weight", {c2}), beta = get(bn + "bias", {c2});
    const Tensor mean = get(bn + "running_mean", {c2}), var = get(bn + "running_var", {c2});
    if (source_ == nullptr) return cv;
    Tensor wf = Tensor::empty(w.shape(), DType::f32), bf = Tensor::empty({c2}, DType::f32);
    ops::fold_batch_norm(w, TensorView{}, gamma, beta, mean, var, c_.bn_eps, wf, bf);
    Tensor ohwi = Tensor::empty({c2, k, k, c1 / g}, DType::f32);
    ops::conv_weight_from_oihw(wf, ohwi);
    cv.weight = f32_to_model(ohwi, dtype_, device_);
    cv.bias = f32_to_model(bf, dtype_, device_);
    return cv;
  }
};

bool mnv4_ends_with(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

}  // namespace

std::vector<TensorDecl> mobilenetv4_weight_decls(const MobileNetV4Config& c) {
  MobileNetV4Walker w(c, nullptr, DType::f32, Device::cpu());
  w.run();
  return std::move(w.decls);
}

MobileNetV4Weights build_mobilenetv4_weights(const MobileNetV4Config& c, const MobileNetV4TensorSource& source,
                                             DType dtype, Device device) {
  MobileNetV4Walker w(c, &source, dtype, device);
  return w.run();
}

MobileNetV4Weights load_mobilenetv4_weights(const MobileNetV4Config& c, const fs::path& path, DType dtype,
                                            Device device) {
  const safetensors::Checkpoint ckpt = safetensors::Checkpoint::open(path);
  const MobileNetV4TensorSource source = [&](const std::string& name, const Shape& shape) {
    return read_f32_tensor(ckpt, name, shape, "a MobileNetV4 model of this config");
  };
  return build_mobilenetv4_weights(c, source, dtype, device);
}

std::map<std::string, Tensor> random_mobilenetv4_state_dict(const MobileNetV4Config& c, uint64_t seed) {
  std::map<std::string, Tensor> sd;
  uint64_t offset = 0;
  for (const TensorDecl& d : mobilenetv4_weight_decls(c)) {
    Tensor t = Tensor::empty(d.shape, DType::f32);
    if (mnv4_ends_with(d.name, "bn.weight") || mnv4_ends_with(d.name, "bn1.weight") ||
        mnv4_ends_with(d.name, "bn2.weight") || d.name == "norm_head.weight") {
      fill_uniform(t, seed, offset, 0.8f, 1.2f);
    } else if (mnv4_ends_with(d.name, "running_var")) {
      fill_uniform(t, seed, offset, 0.5f, 1.5f);
    } else if (d.shape.size() == 4 || d.name == "classifier.weight") {
      double fan_in = 1;
      for (size_t i = 1; i < d.shape.size(); ++i) fan_in *= static_cast<double>(d.shape[i]);
      // A residual branch's last conv at a fifth of the gain: each of the ten residual blocks
      // then adds little to its input's power, as trained networks' small last BatchNorm
      // scales do, instead of doubling it (which would take f16 logits near overflow).
      const bool branch_end =
          mnv4_ends_with(d.name, "pw_proj.conv.weight") || mnv4_ends_with(d.name, "conv_pwl.weight");
      const double gain = branch_end ? 0.2 : d.shape.size() == 4 ? 2.0 : 1.0;
      const double var = gain / fan_in;
      const float a = static_cast<float>(std::sqrt(3.0 * var));  // uniform(-a, a) has variance a^2 / 3
      fill_uniform(t, seed, offset, -a, a);
    } else {  // BatchNorm shifts and means, the classifier's bias
      fill_uniform(t, seed, offset, -0.1f, 0.1f);
    }
    ++offset;
    sd.emplace(d.name, std::move(t));
  }
  return sd;
}

MobileNetV4Weights random_mobilenetv4_weights(const MobileNetV4Config& c, uint64_t seed, DType dtype, Device device) {
  const std::map<std::string, Tensor> sd = random_mobilenetv4_state_dict(c, seed);
  const MobileNetV4TensorSource source = [&](const std::string& name, const Shape&) { return sd.at(name); };
  return build_mobilenetv4_weights(c, source, dtype, device);
}

}  // namespace fk::models::vision
