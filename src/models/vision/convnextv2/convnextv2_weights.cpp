#include "models/vision/convnextv2/convnextv2_weights.h"

#include <cmath>

#include "core/safetensors/safetensors.h"
#include "fk/random.h"
#include "fk/status.h"
#include "models/checkpoint_tensor.h"
#include "ops/conv/conv_weights.h"

namespace fk::models::vision {
namespace {

// Walks the model in state-dict order. Without a source it only records the declarations;
// with one it reads and converts each tensor.
class ConvNextV2Walker {
 public:
  ConvNextV2Walker(const ConvNextV2Config& c, const ConvNextV2TensorSource* source, DType dtype, Device device)
      : c_(c), source_(source), dtype_(dtype), device_(device) {}

  std::vector<TensorDecl> decls;

  ConvNextV2Weights run() {
    ConvNextV2Weights w;
    const std::string e = "convnextv2.embeddings.";
    const int64_t p = c_.patch_size;
    w.patch_weight = conv(e + "patch_embeddings.weight", {c_.hidden_sizes[0], 3, p, p});
    w.patch_bias = vec(e + "patch_embeddings.bias", c_.hidden_sizes[0]);
    w.embed_ln_weight = vec(e + "layernorm.weight", c_.hidden_sizes[0]);
    w.embed_ln_bias = vec(e + "layernorm.bias", c_.hidden_sizes[0]);
    for (int64_t i = 0; i < c_.stages(); ++i) {
      const std::string s = "convnextv2.encoder.stages." + std::to_string(i) + ".";
      const int64_t C = c_.hidden_sizes[static_cast<size_t>(i)];
      ConvNextV2Stage st;
      if (i > 0) {
        const int64_t prev = c_.hidden_sizes[static_cast<size_t>(i - 1)];
        st.down_ln_weight = vec(s + "downsampling_layer.0.weight", prev);
        st.down_ln_bias = vec(s + "downsampling_layer.0.bias", prev);
        st.down_weight = conv(s + "downsampling_layer.1.weight", {C, prev, 2, 2});
        st.down_bias = vec(s + "downsampling_layer.1.bias", C);
      }
      for (int64_t j = 0; j < c_.depths[static_cast<size_t>(i)]; ++j) {
        const std::string l = s + "layers." + std::to_string(j) + ".";
        ConvNextV2Block b;
        b.dw_weight = conv(l + "dwconv.weight", {C, 1, 7, 7});
        b.dw_bias = vec(l + "dwconv.bias", C);
        b.ln_weight = vec(l + "layernorm.weight", C);
        b.ln_bias = vec(l + "layernorm.bias", C);
        b.pw1_weight = mat(l + "pwconv1.weight", {4 * C, C});
        b.pw1_bias = vec(l + "pwconv1.bias", 4 * C);
        b.grn_gamma = mat(l + "grn.weight", {1, 1, 1, 4 * C}, {4 * C});
        b.grn_beta = mat(l + "grn.bias", {1, 1, 1, 4 * C}, {4 * C});
        b.pw2_weight = mat(l + "pwconv2.weight", {C, 4 * C});
        b.pw2_bias = vec(l + "pwconv2.bias", C);
        st.blocks.push_back(std::move(b));
      }
      w.stages.push_back(std::move(st));
    }
    const int64_t last = c_.hidden_sizes.back();
    w.final_ln_weight = vec("convnextv2.layernorm.weight", last);
    w.final_ln_bias = vec("convnextv2.layernorm.bias", last);
    w.classifier_weight = mat("classifier.weight", {c_.num_classes, last});
    w.classifier_bias = vec("classifier.bias", c_.num_classes);
    return w;
  }

 private:
  const ConvNextV2Config& c_;
  const ConvNextV2TensorSource* source_;
  DType dtype_;
  Device device_;

  Tensor get(const std::string& name, const Shape& shape) {
    decls.push_back({name, shape, DType::f32, ""});
    if (source_ == nullptr) return Tensor{};
    Tensor t = (*source_)(name, shape);
    expect_source_tensor(t, name, shape, "convnextv2");
    return t;
  }
  // A tensor as the model reads it, reshaped to `as` when given.
  Tensor mat(const std::string& name, const Shape& shape, const Shape& as = {}) {
    Tensor t = get(name, shape);
    if (!t.defined()) return t;
    if (!as.empty()) t = t.reshape(as);
    return f32_to_model(t, dtype_, device_);
  }
  Tensor vec(const std::string& name, int64_t n) { return mat(name, {n}); }
  // An OIHW convolution weight as OHWI.
  Tensor conv(const std::string& name, const Shape& oihw) {
    const Tensor t = get(name, oihw);
    if (!t.defined()) return t;
    Tensor ohwi = Tensor::empty({oihw[0], oihw[2], oihw[3], oihw[1]}, DType::f32);
    ops::conv_weight_from_oihw(t, ohwi);
    return f32_to_model(ohwi, dtype_, device_);
  }
};

bool convnextv2_ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::vector<TensorDecl> convnextv2_weight_decls(const ConvNextV2Config& c) {
  ConvNextV2Walker w(c, nullptr, DType::f32, Device::cpu());
  w.run();
  return std::move(w.decls);
}

ConvNextV2Weights build_convnextv2_weights(const ConvNextV2Config& c, const ConvNextV2TensorSource& source, DType dtype,
                                           Device device) {
  ConvNextV2Walker w(c, &source, dtype, device);
  return w.run();
}

ConvNextV2Weights load_convnextv2_weights(const ConvNextV2Config& c, const std::filesystem::path& path, DType dtype,
                                          Device device) {
  const safetensors::Checkpoint ckpt = safetensors::Checkpoint::open(path);
  const ConvNextV2TensorSource source = [&](const std::string& name, const Shape& shape) {
    return read_f32_tensor(ckpt, name, shape, "a ConvNeXt V2 model of this config");
  };
  return build_convnextv2_weights(c, source, dtype, device);
}

ConvNextV2Weights random_convnextv2_weights(const ConvNextV2Config& c, uint64_t seed, DType dtype, Device device) {
  std::map<std::string, Tensor> sd;
  uint64_t offset = 0;
  for (const TensorDecl& d : convnextv2_weight_decls(c)) {
    Tensor t = Tensor::empty(d.shape, DType::f32);
    const bool norm =
        convnextv2_ends_with(d.name, "layernorm.weight") || convnextv2_ends_with(d.name, "downsampling_layer.0.weight");
    if (norm) {
      fill_uniform(t, seed, offset, 0.8f, 1.2f);
    } else if (d.shape.size() >= 2 && !convnextv2_ends_with(d.name, "grn.weight")) {
      double fan_in = 1;
      for (size_t i = 1; i < d.shape.size(); ++i) fan_in *= static_cast<double>(d.shape[i]);
      const double var = (convnextv2_ends_with(d.name, "pwconv2.weight") ? 0.1 : 1.0) / fan_in;
      const float a = static_cast<float>(std::sqrt(3.0 * var));  // uniform(-a, a) has variance a^2 / 3
      fill_uniform(t, seed, offset, -a, a);
    } else {  // biases, LayerNorm shifts, the GRN's gamma and beta
      fill_uniform(t, seed, offset, -0.1f, 0.1f);
    }
    ++offset;
    sd.emplace(d.name, std::move(t));
  }
  const ConvNextV2TensorSource source = [&](const std::string& name, const Shape&) { return sd.at(name); };
  return build_convnextv2_weights(c, source, dtype, device);
}

}  // namespace fk::models::vision
