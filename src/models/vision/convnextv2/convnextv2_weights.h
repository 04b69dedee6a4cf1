// A ConvNeXt V2 classifier's weights, named as transformers' state dict names them, turned at
// load into what the forward pass runs: convolutions OIHW -> OHWI, everything in the model
// dtype on its device. Names (prefix "convnextv2."):
//   embeddings.patch_embeddings.{weight [C0, 3, p, p], bias}, embeddings.layernorm.{weight, bias}
//   encoder.stages.<i>.downsampling_layer.0.{weight, bias}  (LayerNorm, stages after the first)
//   encoder.stages.<i>.downsampling_layer.1.{weight [C, C', 2, 2], bias}
//   encoder.stages.<i>.layers.<j>.dwconv.{weight [C, 1, 7, 7], bias}, .layernorm.{weight, bias},
//     .pwconv1.{weight [4C, C], bias}, .grn.{weight, bias} [1, 1, 1, 4C], .pwconv2.{weight [C, 4C], bias}
//   layernorm.{weight, bias} (the pooled features'); and classifier.{weight, bias} (no prefix).
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/vision/convnextv2/convnextv2_config.h"

namespace fk::models::vision {

struct ConvNextV2Block {
  Tensor dw_weight, dw_bias;    // [C, 7, 7, 1], [C]
  Tensor ln_weight, ln_bias;    // [C]
  Tensor pw1_weight, pw1_bias;  // [4C, C], [4C]
  Tensor grn_gamma, grn_beta;   // [4C]
  Tensor pw2_weight, pw2_bias;  // [C, 4C], [C]
};

struct ConvNextV2Stage {
  Tensor down_ln_weight, down_ln_bias;  // [C'] (stages after the first)
  Tensor down_weight, down_bias;        // [C, 2, 2, C'], [C]
  std::vector<ConvNextV2Block> blocks;
};

struct ConvNextV2Weights {
  Tensor patch_weight, patch_bias;  // [C0, p, p, 3], [C0]
  Tensor embed_ln_weight, embed_ln_bias;
  std::vector<ConvNextV2Stage> stages;
  Tensor final_ln_weight, final_ln_bias;  // [C_last]
  Tensor classifier_weight, classifier_bias;
};

// Every tensor read from the state dict, transformers' names and shapes (f32).
std::vector<TensorDecl> convnextv2_weight_decls(const ConvNextV2Config& c);

using ConvNextV2TensorSource = std::function<Tensor(const std::string& name, const Shape& shape)>;

ConvNextV2Weights build_convnextv2_weights(const ConvNextV2Config& c, const ConvNextV2TensorSource& source, DType dtype,
                                           Device device);
// From a safetensors checkpoint (a file, a folder or a shard index).
ConvNextV2Weights load_convnextv2_weights(const ConvNextV2Config& c, const std::filesystem::path& path, DType dtype,
                                          Device device);
// A random state dict (host f32) from Philox(seed): convolutions and linear layers uniform
// with variance 1 / fan_in (none is followed by a ReLU's halving) except pwconv2 at 0.1 /
// fan_in (its output is added to the block's input), LayerNorm scales in [0.8, 1.2), the
// GRN's gamma and every bias and shift in [-0.1, 0.1).
ConvNextV2Weights random_convnextv2_weights(const ConvNextV2Config& c, uint64_t seed, DType dtype, Device device);

}  // namespace fk::models::vision
