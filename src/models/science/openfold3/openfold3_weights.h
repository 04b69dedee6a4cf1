// OpenFold3's Pairformer stack weights, named as OpenFold3's state dict names them
// ("pairformer_stack.blocks.<i>." then PairFormerBlock's modules), turned at load into the
// layouts of the pairformer_block op (fk/ops/pairformer_block.h): per block
//   pair_stack.tri_mul_out / tri_mul_in   layer_norm_in, linear_a_g, linear_a_p, linear_b_g,
//                                         linear_b_p, linear_g (fused in that row order into
//                                         in_weight), layer_norm_out, linear_z (out_weight)
//   pair_stack.tri_att_start / tri_att_end layer_norm, mha.linear_q / k / v / g (fused into
//                                         qkvg_weight), linear_z (bias_weight), mha.linear_o
//   pair_stack.pair_transition, single_transition
//                                         layer_norm, swiglu.linear_a / linear_b (fused into
//                                         in_weight: u then w), linear_out
//   attn_pair_bias                        layer_norm_a, layer_norm_z, mha.linear_q (weight and
//                                         bias), mha.linear_k / v / g (fused into kvg_weight),
//                                         linear_z (bias_weight), mha.linear_o
// Every Linear has no bias but attn_pair_bias.mha.linear_q; every LayerNorm has a weight and
// a bias. tri_att_end is applied by OpenFold3 to the transposed pair as a starting-node
// module: its weights are those of the ending-node op as they are.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fk/ops/pairformer_block.h"
#include "fk/tensor.h"
#include "models/model.h"
#include "models/science/openfold3/openfold3_config.h"

namespace fk::models::science {

struct OpenFold3Block {
  std::vector<Tensor> owned;        // the fused tensors the views point into
  ops::PairformerBlockWeights ops;  // views of `owned`, in the model dtype on its device
};

struct OpenFold3Weights {
  std::vector<OpenFold3Block> blocks;
};

// The state dict's prefix of block i: "pairformer_stack.blocks.<i>.".
std::string openfold3_block_prefix(int64_t block);

// Every tensor of the Pairformer stack's state dict, upstream names and shapes (f32).
std::vector<TensorDecl> openfold3_weight_decls(const OpenFold3Config& c);

// A tensor of the state dict as a host f32 tensor of the declared shape; throws naming a
// missing or mis-shaped tensor.
using OpenFold3TensorSource = std::function<Tensor(const std::string& name, const Shape& shape)>;

OpenFold3Weights build_openfold3_weights(const OpenFold3Config& c, const OpenFold3TensorSource& source, DType dtype,
                                         Device device);
// From safetensors (a file, a folder or a shard index), names as above or all prefixed with
// "model." (OpenFold3's training checkpoints).
OpenFold3Weights load_openfold3_weights(const OpenFold3Config& c, const std::filesystem::path& path, DType dtype,
                                        Device device);
// A random state dict (host f32) from Philox(seed): LayerNorm weights in [0.5, 1.5), their
// biases and linear_q's bias in [-0.2, 0.2), projections uniform with standard deviation
// 1 / sqrt(fan_in).
std::map<std::string, Tensor> random_openfold3_state_dict(const OpenFold3Config& c, uint64_t seed);
OpenFold3Weights random_openfold3_weights(const OpenFold3Config& c, uint64_t seed, DType dtype, Device device);

}  // namespace fk::models::science
