// Where the vision tower's outputs enter Qwen3-VL's text model, for a packed prompt: the
// merged image features replace the image tokens' embeddings (in prompt order: the k-th
// image token takes merged row k), and deepstack feature j is added to the hidden states at
// the image tokens after text layer j (transformers' _deepstack_process). Both run through
// registry ops, one call per run of consecutive image tokens: the placement is an embedding
// gather whose table is the merged features, the injection weighted_embedding_add with one
// tap of weight 1 (an exact add).
#pragma once
#include <cstdint>
#include <vector>

#include "fk/tensor.h"

namespace fk::models::vlm {

struct ImageTokenRun {
  int64_t token = 0;    // first token of the run in the packed prompt
  int64_t feature = 0;  // its first row of the merged / deepstack features
  int64_t length = 0;
};

// The runs of image_token_id in `ids`, features counted in order.
std::vector<ImageTokenRun> image_token_runs(const std::vector<int64_t>& ids, int64_t image_token_id);

class ImageFeatureScatter {
 public:
  // Uploads the per-token feature indices (and unit weights) for `runs` to `device`.
  ImageFeatureScatter(std::vector<ImageTokenRun> runs, Device device);

  int64_t features() const { return features_; }
  // embeds[run.token + i, :] = merged[run.feature + i, :]; merged [features, H] (rows contiguous).
  void place(const TensorView& embeds, const TensorView& merged, void* stream) const;
  // hidden[run.token + i, :] += deepstack[run.feature + i, :].
  void inject(const TensorView& hidden, const TensorView& deepstack, void* stream) const;

 private:
  std::vector<ImageTokenRun> runs_;
  Device device_;
  int64_t features_ = 0;
  Tensor ids_, weights_;  // [features] i32: 0..features-1; [features, 1] f32 ones
};

}  // namespace fk::models::vlm
