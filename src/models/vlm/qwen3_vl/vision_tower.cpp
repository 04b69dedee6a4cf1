#include "models/vlm/qwen3_vl/vision_tower.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "fk/element.h"
#include "fk/op_registry.h"
#include "fk/ops/activation.h"
#include "fk/ops/linear.h"
#include "fk/ops/norm.h"
#include "fk/ops/vision_block.h"
#include "fk/ops/weighted_embedding.h"
#include "fk/status.h"

namespace fk::models::vlm {
namespace {

// The first n rows of a buffer.
TensorView rows(const Tensor& t, int64_t n) {
  TensorView v = t.view();
  v.shape[0] = n;
  return v;
}

// A [n, width] buffer's rows seen as [n / k, width * k] (consecutive rows joined).
TensorView joined(const Tensor& t, int64_t n, int64_t k) {
  TensorView v = t.view();
  v.shape[0] = n / k;
  v.shape[1] *= k;
  v.strides[0] *= k;
  return v;
}

template <class T>
Tensor upload(const std::vector<T>& host, const Shape& shape, DType dtype, Device device) {
  Tensor t = Tensor::empty(shape, dtype);
  if (!host.empty()) std::memcpy(t.data(), host.data(), host.size() * sizeof(T));
  return device.is_cpu() ? t : t.to(device);
}

}  // namespace

Qwen3VLVisionTower::Qwen3VLVisionTower(Qwen3VLVisionConfig config, Qwen3VLVisionWeights weights, DType dtype,
                                       Device device, int64_t max_patches, void* stream)
    : config_(std::move(config)), weights_(std::move(weights)), dtype_(dtype), device_(device),
      max_patches_(max_patches) {
  FK_CHECK(dtype == DType::bf16 || dtype == DType::f16, "qwen3_vl vision: the model dtype must be bf16 or f16, got ",
           dtype_name(dtype));
  FK_CHECK(max_patches > 0 && max_patches % config_.merge_unit() == 0, "qwen3_vl vision: max_patches ", max_patches,
           " must be a positive multiple of ", config_.merge_unit());
  const int64_t n = max_patches, h = config_.hidden_size, i = config_.intermediate_size, m = config_.merged_dim();
  auto buffer = [&](const Shape& s) { return Tensor::empty(s, dtype, device, stream); };
  x_ = buffer({n, h});
  xn_ = buffer({n, h});
  qkv_ = buffer({n, 3 * h});
  attn_ = buffer({n, h});
  sub_ = buffer({n, h});
  inter_ = buffer({n, i});
  inter_act_ = buffer({n, i});
  m1_ = buffer({n / config_.merge_unit(), m});
  m2_ = buffer({n / config_.merge_unit(), m});
  merged_ = buffer({n / config_.merge_unit(), config_.out_hidden_size});
  for (size_t k = 0; k < config_.deepstack_visual_indexes.size(); ++k)
    deepstack_.push_back(buffer({n / config_.merge_unit(), config_.out_hidden_size}));
}

TensorView Qwen3VLVisionTower::deepstack(size_t k) const {
  FK_CHECK(k < deepstack_.size(), "qwen3_vl vision: deepstack feature ", k, " of ", deepstack_.size());
  return rows(deepstack_[k], patches_ / config_.merge_unit());
}

// One block is one qwen3_vl_vision_block call (its composed baseline runs the parts through
// the registry, so fk capture sees the block with its parts nested).
void Qwen3VLVisionTower::block(const VisionBlockWeights& w, void* stream) {
  const int64_t n = patches_;
  ops::Qwen3VLVisionBlockArgs a{};
  a.hidden = rows(x_, n);
  a.norm1 = w.norm1, a.norm1_bias = w.norm1_bias;
  a.qkv_weight = w.qkv, a.qkv_bias = w.qkv_bias;
  a.proj_weight = w.proj, a.proj_bias = w.proj_bias;
  a.norm2 = w.norm2, a.norm2_bias = w.norm2_bias;
  a.fc1_weight = w.fc1, a.fc1_bias = w.fc1_bias;
  a.fc2_weight = w.fc2, a.fc2_bias = w.fc2_bias;
  a.positions = rows(rope_positions_, n);
  a.cos_sin_cache = rows(rope_cache_, n);
  a.cu_seqlens = cu_seqlens_;
  a.cu_seqlens_host = cu_seqlens_host_;
  a.normed = rows(xn_, n);
  a.qkv = rows(qkv_, n);
  a.attn_out = rows(attn_, n);
  a.sub = rows(sub_, n);
  a.inter = rows(inter_, n);
  a.act = rows(inter_act_, n);
  a.num_heads = static_cast<int32_t>(config_.num_heads);
  a.max_seqlen = max_seqlen_;
  a.eps = static_cast<float>(config_.layer_norm_eps);
  a.gelu = config_.gelu;
  call_op(a, device_.type, stream);
}

void Qwen3VLVisionTower::merge(const PatchMergerWeights& w, bool postshuffle_norm, const Tensor& out, void* stream) {
  const DeviceType be = device_.type;
  const int64_t n = patches_, u = config_.merge_unit(), q = n / u;
  const float eps = static_cast<float>(config_.layer_norm_eps);
  const TensorView none{};
  if (postshuffle_norm) {
    call_op(ops::LayerNormArgs{joined(xn_, n, u), joined(x_, n, u), w.norm, w.norm_bias, eps}, be, stream);
  } else {
    call_op(ops::LayerNormArgs{rows(xn_, n), rows(x_, n), w.norm, w.norm_bias, eps}, be, stream);
  }
  call_op(ops::LinearArgs{rows(m1_, q), joined(xn_, n, u), w.fc1, w.fc1_bias, none, none}, be, stream);
  call_op(ops::GeluArgs{rows(m2_, q), rows(m1_, q), ops::GeluApprox::none}, be, stream);  // nn.GELU()
  call_op(ops::LinearArgs{rows(out, q), rows(m2_, q), w.fc2, w.fc2_bias, none, none}, be, stream);
}

TensorView Qwen3VLVisionTower::forward(const TensorView& pixels, const std::vector<PatchGrid>& grids, void* stream) {
  const VisionLayout L = qwen3_vl_vision_layout(config_, grids);
  FK_CHECK(L.patches <= max_patches_, "qwen3_vl vision: ", L.patches, " patches, more than the ", max_patches_,
           " the tower was built for");
  FK_CHECK(pixels.rank == 2 && pixels.shape[0] == L.patches && pixels.shape[1] == config_.patch_dim(),
           "qwen3_vl vision: pixel_values must be [", L.patches, ", ", config_.patch_dim(),
           "] (the grids' patches x channels * temporal_patch_size * patch_size^2), got ", describe(pixels));
  FK_CHECK(pixels.dtype == dtype_, "qwen3_vl vision: pixel_values must be in the model dtype ", dtype_name(dtype_),
           ", got ", describe(pixels));
  patches_ = L.patches;
  max_seqlen_ = L.max_seqlen;
  const int64_t n = L.patches, D = config_.head_dim();
  cu_seqlens_host_ = upload(L.cu_seqlens, {static_cast<int64_t>(L.cu_seqlens.size())}, DType::i32, Device::cpu());
  cu_seqlens_ = device_.is_cpu() ? cu_seqlens_host_ : cu_seqlens_host_.to(device_);
  rope_positions_ = upload(L.rope_positions, {n}, DType::i32, device_);
  rope_cache_ = upload(L.rope_cos_sin, {n, D}, DType::f32, device_);
  pos_ids_ = upload(L.pos_ids, {n, 4}, DType::i32, device_);
  pos_weights_ = upload(L.pos_weights, {n, 4}, DType::f32, device_);

  const DeviceType be = device_.type;
  const TensorView none{};
  call_op(ops::LinearArgs{rows(x_, n), pixels, weights_.patch, weights_.patch_bias, none, none}, be, stream);
  call_op(ops::WeightedEmbeddingAddArgs{rows(x_, n), pos_ids_, pos_weights_, weights_.pos_embed}, be, stream);
  for (size_t l = 0; l < weights_.blocks.size(); ++l) {
    block(weights_.blocks[l], stream);
    const auto& idx = config_.deepstack_visual_indexes;
    const auto it = std::find(idx.begin(), idx.end(), static_cast<int64_t>(l));
    if (it != idx.end()) {
      const size_t k = static_cast<size_t>(it - idx.begin());
      merge(weights_.deepstack[k], true, deepstack_[k], stream);
    }
  }
  merge(weights_.merger, false, merged_, stream);
  return rows(merged_, n / config_.merge_unit());
}

}  // namespace fk::models::vlm
