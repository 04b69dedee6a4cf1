#include "models/vlm/qwen3_vl/image_encoder.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "fk/dtype_convert.h"
#include "fk/runtime.h"
#include "fk/status.h"
#include "models/vlm/qwen3_vl/image_features.h"
#include "models/vlm/qwen3_vl/rope_index.h"
#include "models/vlm/qwen3_vl/vision_weights.h"

namespace fk::models::vlm {
namespace {

using nlohmann::json;

json parse(std::string_view text, std::string_view source) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    FK_FAIL(FK_ERR_INVALID_ARGUMENT, source, ": not valid JSON (", e.what(), ")");
  }
}

int64_t token_id(const json& j, const char* key, std::string_view source) {
  FK_CHECK(j.contains(key) && j.at(key).is_number_integer(), source, ": Qwen3-VL config needs an integer '", key, "'");
  return j.at(key).get<int64_t>();
}

// A copy of a device view in a tensor of its own (allocated on the stream).
Tensor copy_of(const TensorView& v, void* stream) {
  Tensor t = Tensor::empty({v.shape[0], v.shape[1]}, v.dtype, v.device, stream);
  FK_CHECK(v.is_contiguous(), "qwen3_vl image encoder: the vision tower's output is not contiguous");
  rt::memcpy_async(t.data(), t.device(), v.data, v.device, static_cast<size_t>(v.nbytes()), stream);
  return t;
}

}  // namespace

bool is_qwen3_vl_config(std::string_view config_json) {
  try {
    const json j = json::parse(config_json);
    return j.is_object() && j.contains("model_type") && j.at("model_type") == "qwen3_vl";
  } catch (const json::exception&) {
    return false;
  }
}

Qwen3VLImageEncoder::Qwen3VLImageEncoder(std::string_view config_json, std::string_view source,
                                         const std::filesystem::path& checkpoint, DType dtype, Device device,
                                         uint64_t seed, int64_t max_patches, void* stream)
    : config_(parse_qwen3_vl_vision_config(config_json, source)), dtype_(dtype), device_(device) {
  const json j = parse(config_json, source);
  image_token_id_ = token_id(j, "image_token_id", source);
  video_token_id_ = token_id(j, "video_token_id", source);
  vision_start_token_id_ = token_id(j, "vision_start_token_id", source);
  vision_end_token_id_ = token_id(j, "vision_end_token_id", source);
  const int64_t unit = config_.merge_unit();
  FK_CHECK(max_patches >= unit, "qwen3_vl image encoder: max_patches ", max_patches, " is less than one merge unit (",
           unit, ")");
  max_patches_ = max_patches / unit * unit;
  Qwen3VLVisionWeights w = checkpoint.empty() ? random_qwen3_vl_vision_weights(config_, dtype, device, seed, stream)
                                              : load_qwen3_vl_vision_weights(config_, checkpoint, dtype, device);
  tower_ = std::make_unique<Qwen3VLVisionTower>(config_, std::move(w), dtype, device, max_patches_, stream);
}

void Qwen3VLImageEncoder::prepare(engine::RequestImages& im, const std::vector<int64_t>& prompt) const {
  FK_CHECK(std::find(prompt.begin(), prompt.end(), video_token_id_) == prompt.end(),
           "qwen3_vl: video inputs are not supported (the prompt holds video token ", video_token_id_, ")");
  std::vector<PatchGrid> grids;
  for (const auto& g : im.grids) {
    grids.push_back({g[0], g[1], g[2]});
    FK_CHECK(g[0] >= 1 && g[1] >= 1 && g[2] >= 1, "qwen3_vl: image ", grids.size() - 1, " has grid (", g[0], ", ",
             g[1], ", ", g[2], "); every side must be positive");
  }
  const int64_t patches = check_qwen3_vl_grids(config_, grids);
  const TensorView pv = im.pixel_values.view();
  FK_CHECK(grids.empty() || (pv.device.is_cpu() && pv.dtype == DType::f32 && pv.rank == 2 && pv.is_contiguous()),
           "qwen3_vl: pixel_values must be a contiguous host f32 [patches, ", config_.patch_dim(), "], got ",
           grids.empty() ? std::string("none") : describe(pv));
  FK_CHECK(grids.empty() || (pv.shape[0] == patches && pv.shape[1] == config_.patch_dim()), "qwen3_vl: pixel_values ",
           describe(pv), " do not hold the grids' ", patches, " patches of ", config_.patch_dim(), " values");
  FK_CHECK(patches <= max_patches_, "qwen3_vl: the request's images have ", patches, " patches, more than the ",
           max_patches_, " the engine's vision tower takes at once");
  const MropePositions pos = qwen3_vl_rope_index(prompt, grids, image_token_id_, config_.spatial_merge_size);
  im.mrope_positions = pos.positions;
  im.rope_delta = pos.delta;
  im.feature_of.assign(prompt.size(), -1);
  im.image_tokens_end = 0;
  for (const ImageTokenRun& r : image_token_runs(prompt, image_token_id_)) {
    for (int64_t i = 0; i < r.length; ++i) im.feature_of[static_cast<size_t>(r.token + i)] = r.feature + i;
    im.image_tokens_end = r.token + r.length;
  }
}

std::shared_ptr<engine::ImageFeatures> Qwen3VLImageEncoder::encode(const engine::RequestImages& im, void* stream) {
  std::vector<PatchGrid> grids;
  for (const auto& g : im.grids) grids.push_back({g[0], g[1], g[2]});
  FK_CHECK(!grids.empty(), "qwen3_vl image encoder: a request without images has nothing to encode");
  // The pixels in the model dtype on the device (allocated on the stream: freed in order).
  const TensorView pv = im.pixel_values.view();
  Tensor host = Tensor::empty({pv.shape[0], pv.shape[1]}, dtype_);
  const auto* src = static_cast<const float*>(pv.data);
  auto* dst = static_cast<uint16_t*>(host.data());
  // A typed loop: an image of 1024 x 1024 pixels is 6.3 M values, where a per-element dtype
  // dispatch would hold the request's prefill for milliseconds of host time.
  const int64_t n = pv.numel();
  if (dtype_ == DType::bf16)
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_bf16(src[i]);
  else
    for (int64_t i = 0; i < n; ++i) dst[i] = float_to_f16(src[i]);
  Tensor pixels = host;
  if (!device_.is_cpu()) {
    pixels = Tensor::empty(host.shape(), dtype_, device_, stream);
    rt::memcpy_async(pixels.data(), device_, host.data(), Device::cpu(), static_cast<size_t>(host.nbytes()), stream);
    rt::stream_synchronize(stream);  // the host staging buffer goes out of scope here
  }
  auto f = std::make_shared<engine::ImageFeatures>();
  f->merged = copy_of(tower_->forward(pixels.view(), grids, stream), stream);
  for (size_t k = 0; k < tower_->num_deepstack(); ++k) f->deepstack.push_back(copy_of(tower_->deepstack(k), stream));
  return f;
}

}  // namespace fk::models::vlm
