// A MobileNetV4 classifier's weights, named as timm's state dict names them, turned at load
// into what the forward pass runs: one conv2d call per Conv-BatchNorm pair with the
// BatchNorm folded in (fold_batch_norm) and OIHW permuted to OHWI, and the classifier as a
// linear layer. Names:
//   stem       conv_stem.weight, bn1.{weight,bias,running_mean,running_var}
//   ConvBnAct  blocks.<s>.<i>.conv.weight, blocks.<s>.<i>.bn1.*
//   EdgeRes.   blocks.<s>.<i>.conv_exp.weight, bn1.*, conv_pwl.weight, bn2.*
//   UIR        blocks.<s>.<i>.{dw_start,pw_exp,dw_mid,pw_proj}.conv.weight and .bn.*
//              (dw_start and dw_mid only where the block has them)
//   head       conv_head.weight [F, C, 1, 1] (no bias), norm_head.*; classifier.{weight,bias}
// BatchNorm's num_batches_tracked is a training counter: not declared, not read.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/vision/mobilenetv4/mobilenetv4_config.h"

namespace fk::models::vision {

// One conv2d call with its folded BatchNorm: OHWI weight and bias of the model dtype.
struct MobileNetV4Conv {
  Tensor weight, bias;  // [K, R, S, C / groups], [K]
  int64_t c_in = 0, c_out = 0;
  int kernel = 1, stride = 1, pad = 0, groups = 1;
  bool relu = false;
};

struct MobileNetV4Weights {
  MobileNetV4Conv stem;
  // Per block, its convs in order: ConvBnAct [conv]; EdgeResidual [conv_exp, conv_pwl];
  // UIR [dw_start?, pw_exp, dw_mid?, pw_proj].
  std::vector<std::vector<MobileNetV4Conv>> blocks;
  MobileNetV4Conv head;      // conv_head + norm_head + ReLU, a 1x1 conv over the pooled pixel
  Tensor classifier_weight;  // [classes, F]
  Tensor classifier_bias;    // [classes]
};

// Every tensor read from the state dict, timm's names and shapes (f32).
std::vector<TensorDecl> mobilenetv4_weight_decls(const MobileNetV4Config& c);

// A tensor of the state dict as a host f32 tensor of the declared shape.
using MobileNetV4TensorSource = std::function<Tensor(const std::string& name, const Shape& shape)>;

MobileNetV4Weights build_mobilenetv4_weights(const MobileNetV4Config& c, const MobileNetV4TensorSource& source,
                                             DType dtype, Device device);
// From a safetensors checkpoint (a file, a folder or a shard index).
MobileNetV4Weights load_mobilenetv4_weights(const MobileNetV4Config& c, const std::filesystem::path& path, DType dtype,
                                            Device device);
// A random state dict (host f32) from Philox(seed): conv filters uniform with variance
// 2 / fan_in (He: ReLU halves the signal's power, so activations keep their scale through
// the depth) except a residual branch's last conv (a UIR's pw_proj, an EdgeResidual's
// conv_pwl) at 0.2 / fan_in (its output is added to the block's input), BatchNorm scales in
// [0.8, 1.2), shifts and means in [-0.1, 0.1), variances in [0.5, 1.5), the classifier
// uniform with variance 1 / fan_in.
std::map<std::string, Tensor> random_mobilenetv4_state_dict(const MobileNetV4Config& c, uint64_t seed);
MobileNetV4Weights random_mobilenetv4_weights(const MobileNetV4Config& c, uint64_t seed, DType dtype, Device device);

}  // namespace fk::models::vision
