#include "models/vlm/qwen3_vl/vision_model.h"

#include "fk/status.h"

namespace fk::models::vlm {
namespace {

TensorView step_input(const StepInputs& in, const char* name) {
  for (const auto& [n, v] : in.tensors)
    if (n == name) return v;
  FK_FAIL(FK_ERR_INVALID_ARGUMENT, "qwen3_vl_vision: step input '", name, "' is missing");
}

}  // namespace

Qwen3VLVisionModel::Qwen3VLVisionModel(Qwen3VLVisionConfig config) : config_(std::move(config)) {}

std::unique_ptr<Model> Qwen3VLVisionModel::from_config(std::string_view config_json, std::string_view source) {
  return std::make_unique<Qwen3VLVisionModel>(parse_qwen3_vl_vision_config(config_json, source));
}

std::vector<TensorDecl> Qwen3VLVisionModel::weights() const {
  return qwen3_vl_vision_weight_decls(config_, options_.dtype);
}

std::vector<TensorDecl> Qwen3VLVisionModel::inputs() const {
  return {{"pixel_values", {kPerCall, config_.patch_dim()}, options_.dtype,
           "the images' patches in the processor's order (frames, merge blocks), C x Tp x P x P values each"},
          {"image_grid_thw", {kPerCall, 3}, DType::i64, "on the host: frames, patch rows and patch columns per image"}};
}

std::vector<TensorDecl> Qwen3VLVisionModel::outputs() const {
  std::vector<TensorDecl> o = {{"image_embeds", {kPerCall, config_.out_hidden_size}, options_.dtype,
                                "merged features, one row per merge_unit patches (the image tokens' embeddings)"}};
  for (size_t k = 0; k < config_.deepstack_visual_indexes.size(); ++k)
    o.push_back({concat("deepstack.", k), {kPerCall, config_.out_hidden_size}, options_.dtype,
                 concat("features after block ", config_.deepstack_visual_indexes[k],
                        ", added to text layer ", k, "'s hidden states at the image tokens")});
  return o;
}

void Qwen3VLVisionModel::load(const LoadOptions& o) {
  FK_CHECK(o.dtype == DType::bf16 || o.dtype == DType::f16, "qwen3_vl_vision: the model dtype must be bf16 or f16, got ",
           dtype_name(o.dtype));
  options_ = o;
  const int64_t unit = config_.merge_unit();
  const int64_t max_patches = (o.max_tokens + unit - 1) / unit * unit;
  Qwen3VLVisionWeights w = o.checkpoint.empty()
                               ? random_qwen3_vl_vision_weights(config_, o.dtype, o.device, o.seed, o.stream)
                               : load_qwen3_vl_vision_weights(config_, o.checkpoint, o.dtype, o.device);
  tower_ = std::make_unique<Qwen3VLVisionTower>(config_, std::move(w), o.dtype, o.device, max_patches, o.stream);
}

void Qwen3VLVisionModel::plan(const StepInputs& in, void*) {
  FK_CHECK(loaded(), "qwen3_vl_vision: plan before load");
  const TensorView g = step_input(in, "image_grid_thw");
  FK_CHECK(g.device.is_cpu() && g.dtype == DType::i64 && g.rank == 2 && g.shape[1] == 3 && g.is_contiguous(),
           "qwen3_vl_vision: image_grid_thw must be a contiguous host i64 [images, 3], got ", describe(g));
  grids_.clear();
  const auto* v = static_cast<const int64_t*>(g.data);
  for (int64_t i = 0; i < g.shape[0]; ++i) grids_.push_back({v[3 * i], v[3 * i + 1], v[3 * i + 2]});
  qwen3_vl_vision_layout(config_, grids_);  // named errors for a bad grid here, before the forward
}

TensorView Qwen3VLVisionModel::forward(const StepInputs& in, void* stream) {
  FK_CHECK(loaded(), "qwen3_vl_vision: forward before load");
  return tower_->forward(step_input(in, "pixel_values"), grids_, stream);
}

}  // namespace fk::models::vlm
