#include "models/vlm/qwen3_vl/image_features.h"

#include <algorithm>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/embedding.h"
#include "fk/ops/weighted_embedding.h"
#include "fk/status.h"

namespace fk::models::vlm {
namespace {

// Rows [first, first + n) of a 2-D view (rank 1: elements).
TensorView slice_rows(TensorView v, int64_t first, int64_t n) {
  v.data = static_cast<char*>(v.data) + first * v.strides[0] * static_cast<int64_t>(v.element_size());
  v.shape[0] = n;
  return v;
}

}  // namespace

std::vector<ImageTokenRun> image_token_runs(const std::vector<int64_t>& ids, int64_t image_token_id) {
  std::vector<ImageTokenRun> runs;
  int64_t feature = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] != image_token_id) continue;
    if (runs.empty() || runs.back().token + runs.back().length != static_cast<int64_t>(i))
      runs.push_back({static_cast<int64_t>(i), feature, 0});
    ++runs.back().length;
    ++feature;
  }
  return runs;
}

ImageFeatureScatter::ImageFeatureScatter(std::vector<ImageTokenRun> runs, Device device)
    : runs_(std::move(runs)), device_(device) {
  for (const ImageTokenRun& r : runs_) {
    FK_CHECK(r.length >= 0 && r.token >= 0 && r.feature >= 0, "qwen3_vl image features: a run needs non-negative token, ",
             "feature and length");
    features_ = std::max(features_, r.feature + r.length);
  }
  Tensor ids = Tensor::empty({features_}, DType::i32), w = Tensor::empty({features_, 1}, DType::f32);
  for (int64_t f = 0; f < features_; ++f) {
    ids.data_as<int32_t>()[f] = static_cast<int32_t>(f);
    w.data_as<float>()[f] = 1.f;
  }
  ids_ = device.is_cpu() ? ids : ids.to(device);
  weights_ = device.is_cpu() ? w : w.to(device);
}

void ImageFeatureScatter::place(const TensorView& embeds, const TensorView& merged, void* stream) const {
  FK_CHECK(merged.rank == 2 && merged.shape[0] >= features_, "qwen3_vl image features: merged features ",
           describe(merged), " have fewer than the prompt's ", features_, " image tokens");
  for (const ImageTokenRun& r : runs_)
    call_op(ops::EmbeddingArgs{slice_rows(embeds, r.token, r.length), slice_rows(ids_.view(), r.feature, r.length),
                               merged},
            device_.type, stream);
}

void ImageFeatureScatter::inject(const TensorView& hidden, const TensorView& deepstack, void* stream) const {
  FK_CHECK(deepstack.rank == 2 && deepstack.shape[0] >= features_, "qwen3_vl image features: deepstack features ",
           describe(deepstack), " have fewer than the prompt's ", features_, " image tokens");
  TensorView ids2 = ids_.view();  // [features] read as [features, 1]: one tap per token
  ids2.rank = 2;
  ids2.shape[1] = 1;
  ids2.strides[0] = 1;
  ids2.strides[1] = 1;
  for (const ImageTokenRun& r : runs_)
    call_op(ops::WeightedEmbeddingAddArgs{slice_rows(hidden, r.token, r.length), slice_rows(ids2, r.feature, r.length),
                                          slice_rows(weights_.view(), r.feature, r.length), deepstack},
            device_.type, stream);
}

}  // namespace fk::models::vlm
