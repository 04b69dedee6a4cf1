// Qwen3-VL's vision tower (transformers' Qwen3VLVisionModel) on one device, every op through
// the registry:
//   x = patch_embed(pixel_values) (a linear layer) + the bilinearly interpolated position
//       grid (weighted_embedding_add)
//   per block (one qwen3_vl_vision_block call, fk/ops/vision_block.h):
//              x += proj(attn(rope2d(qkv(LN1(x))))) per frame (varlen_attention);
//              x += fc2(gelu_tanh(fc1(LN2(x))))
//   after block deepstack_visual_indexes[k]: deepstack[k] = deepstack merger k of x
//   merged = merger(x)
// A merger: LayerNorm (over each patch's H, or over the merged 4H for the deepstack ones),
// then the merge_unit consecutive patches as one row of 4H, fc1, exact GELU, fc2 to the
// text model's width. Residual adds are the add op, in place on x.
#pragma once
#include <cstdint>
#include <vector>

#include "fk/tensor.h"
#include "models/vlm/qwen3_vl/vision_layout.h"
#include "models/vlm/qwen3_vl/vision_weights.h"

namespace fk::models::vlm {

class Qwen3VLVisionTower {
 public:
  // Buffers for up to max_patches patches (all images of one call together).
  Qwen3VLVisionTower(Qwen3VLVisionConfig config, Qwen3VLVisionWeights weights, DType dtype, Device device,
                     int64_t max_patches, void* stream);

  const Qwen3VLVisionConfig& config() const { return config_; }
  const Qwen3VLVisionWeights& weights() const { return weights_; }

  // pixel_values: [patches, patch_dim] in the model dtype on the device, patches in the
  // processor's order for `grids`. Returns the merged features [patches / 4, out]; the
  // deepstack features are deepstack(k) until the next call. Host-side layout is computed
  // and uploaded here (synchronous copies).
  TensorView forward(const TensorView& pixel_values, const std::vector<PatchGrid>& grids, void* stream);
  TensorView deepstack(size_t k) const;
  size_t num_deepstack() const { return deepstack_.size(); }

 private:
  void block(const VisionBlockWeights& w, void* stream);
  void merge(const PatchMergerWeights& w, bool postshuffle_norm, const Tensor& out, void* stream);

  Qwen3VLVisionConfig config_;
  Qwen3VLVisionWeights weights_;
  DType dtype_;
  Device device_;
  int64_t max_patches_;
  int64_t patches_ = 0;
  int32_t max_seqlen_ = 0;
  Tensor x_, xn_, qkv_, attn_, sub_, inter_, inter_act_, m1_, m2_;
  Tensor cu_seqlens_, cu_seqlens_host_, rope_positions_, rope_cache_, pos_ids_, pos_weights_;
  Tensor merged_;
  std::vector<Tensor> deepstack_;
};

}  // namespace fk::models::vlm
