// Oasis DiT weights on one device, read from open-oasis's checkpoint under its own names
// (the state dict of its DiT module) or drawn at random. One change of layout: the patch
// embedding's Conv2d weight [H, C, p, p] is kept as the [H, C*p*p] matrix it is over a
// patch's (channel, row, column) values, since a stride-p convolution of p x p patches is
// that GEMM; and the final linear's rows are reordered to give each output patch in that same
// (channel, row, column) order (upstream's is (row, column, channel), undone by its
// unpatchify), so the sampler combines prediction and noisy patches element for element.
// The rotary embeddings' `freqs` in the checkpoint are functions of the config (computed by
// the model, not read).
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/world/oasis/oasis_config.h"

namespace fk::models::world {

// A torch.nn.Linear: weight [out, in], bias [out] (undefined where upstream has none).
struct OasisLinear {
  Tensor weight, bias;
};

// One half of a SpatioTemporalDiTBlock (s_* or t_*): adaLN-Zero modulation, attention, MLP.
struct OasisHalfBlockWeights {
  OasisLinear modulation;  // adaLN_modulation.1 [6H, H]: shift, scale, gate (attention) | (MLP)
  OasisLinear qkv;         // attn.to_qkv [3H, H], no bias
  OasisLinear out;         // attn.to_out [H, H]
  OasisLinear fc1, fc2;    // mlp.fc1 [M, H], mlp.fc2 [H, M]
};

struct OasisBlockWeights {
  OasisHalfBlockWeights spatial, temporal;
};

struct OasisWeights {
  OasisLinear x_embedder;     // x_embedder.proj as [H, C*p*p]
  OasisLinear t_1, t_2;       // t_embedder.mlp.0 [H, 256], t_embedder.mlp.2 [H, H]
  OasisLinear external_cond;  // [H, E] (external_cond_dim > 0)
  std::vector<OasisBlockWeights> blocks;
  OasisLinear final_modulation;  // final_layer.adaLN_modulation.1 [2H, H]: shift, scale
  OasisLinear final_linear;      // final_layer.linear [C*p*p, H], rows channel first
};

// Every tensor the model reads from the checkpoint, named and shaped as upstream stores it.
std::vector<TensorDecl> oasis_weight_decls(const OasisConfig& c, DType dtype);

// Reads the checkpoint at `path` (a folder, a .safetensors file or a shard index),
// converting to `dtype`. Throws naming the missing or mis-shaped tensor.
OasisWeights load_oasis_weights(const OasisConfig& c, const std::filesystem::path& path, DType dtype, Device device);

// Dummy weights drawn on the device from Philox(seed): projections with standard deviation
// 1/sqrt(fan_in), small biases.
OasisWeights random_oasis_weights(const OasisConfig& c, DType dtype, Device device, uint64_t seed, void* stream);

}  // namespace fk::models::world
