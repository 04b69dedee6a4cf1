// Qwen3-VL's vision tower weights on one device, read from the upstream checkpoint under
// transformers' names (Qwen3VLForConditionalGeneration's "model.visual." prefix; "visual."
// or no prefix, as a bare Qwen3VLVisionModel saves it, are accepted) or drawn at random.
// The Conv3d patch embedding (stride = kernel) is a linear layer over a patch's
// C x Tp x P x P values: its [hidden, C, Tp, P, P] weight is read as [hidden, patch_dim].
#pragma once
#include <cstdint>
#include <filesystem>
#include <vector>

#include "fk/tensor.h"
#include "models/model.h"
#include "models/vlm/qwen3_vl/vision_config.h"

namespace fk::models::vlm {

struct VisionBlockWeights {
  Tensor norm1, norm1_bias;  // [H], [H]
  Tensor qkv, qkv_bias;      // [3H, H], [3H]
  Tensor proj, proj_bias;    // [H, H], [H]
  Tensor norm2, norm2_bias;  // [H], [H]
  Tensor fc1, fc1_bias;      // [I, H], [I]
  Tensor fc2, fc2_bias;      // [H, I], [H]
};

// merger (norm over H per patch) and deepstack mergers (norm over the merged 4H).
struct PatchMergerWeights {
  Tensor norm, norm_bias;  // [H] or [4H]
  Tensor fc1, fc1_bias;    // [4H, 4H], [4H]
  Tensor fc2, fc2_bias;    // [out, 4H], [out]
};

struct Qwen3VLVisionWeights {
  Tensor patch, patch_bias;  // [H, patch_dim], [H]
  Tensor pos_embed;          // [num_position_embeddings, H]
  std::vector<VisionBlockWeights> blocks;
  PatchMergerWeights merger;
  std::vector<PatchMergerWeights> deepstack;
};

// The upstream tensors (names with the "model.visual." prefix, upstream shapes).
std::vector<TensorDecl> qwen3_vl_vision_weight_decls(const Qwen3VLVisionConfig& c, DType dtype);

// Throws naming the missing or mis-shaped tensor.
Qwen3VLVisionWeights load_qwen3_vl_vision_weights(const Qwen3VLVisionConfig& c, const std::filesystem::path& path,
                                                  DType dtype, Device device);

// Dummy weights: projections with standard deviation 1/sqrt(fan_in), the position grid in
// [-1/2, 1/2), norms near identity, small biases; drawn on the device from Philox(seed).
Qwen3VLVisionWeights random_qwen3_vl_vision_weights(const Qwen3VLVisionConfig& c, DType dtype, Device device,
                                                    uint64_t seed, void* stream);

}  // namespace fk::models::vlm
