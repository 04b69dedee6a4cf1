#include "models/vlm/qwen3_vl/vision_weights.h"

#include <cmath>
#include <functional>
#include <string>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/random.h"
#include "fk/status.h"

namespace fk::models::vlm {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPrefix = "model.visual.";

std::string block(int64_t l, const char* what) { return concat("blocks.", l, ".", what); }
std::string deepstack(size_t k, const char* what) { return concat("deepstack_merger_list.", k, ".", what); }

// Every tensor of the tower, with the shape the tower holds it in and the upstream shape.
// `visit(name, shape, upstream_shape, slot)` is called once per tensor in a fixed order.
using Visit = std::function<void(const std::string&, const Shape&, const Shape&, Tensor&)>;

void for_each_tensor(const Qwen3VLVisionConfig& c, Qwen3VLVisionWeights& w, const Visit& visit) {
  const int64_t h = c.hidden_size, i = c.intermediate_size, m = c.merged_dim(), o = c.out_hidden_size;
  visit("patch_embed.proj.weight", {h, c.patch_dim()},
        {h, c.in_channels, c.temporal_patch_size, c.patch_size, c.patch_size}, w.patch);
  visit("patch_embed.proj.bias", {h}, {h}, w.patch_bias);
  visit("pos_embed.weight", {c.num_position_embeddings, h}, {c.num_position_embeddings, h}, w.pos_embed);
  w.blocks.resize(static_cast<size_t>(c.depth));
  for (int64_t l = 0; l < c.depth; ++l) {
    VisionBlockWeights& b = w.blocks[static_cast<size_t>(l)];
    const std::pair<const char*, std::pair<Shape, Tensor*>> items[] = {
        {"norm1.weight", {{h}, &b.norm1}},          {"norm1.bias", {{h}, &b.norm1_bias}},
        {"attn.qkv.weight", {{3 * h, h}, &b.qkv}},  {"attn.qkv.bias", {{3 * h}, &b.qkv_bias}},
        {"attn.proj.weight", {{h, h}, &b.proj}},    {"attn.proj.bias", {{h}, &b.proj_bias}},
        {"norm2.weight", {{h}, &b.norm2}},          {"norm2.bias", {{h}, &b.norm2_bias}},
        {"mlp.linear_fc1.weight", {{i, h}, &b.fc1}}, {"mlp.linear_fc1.bias", {{i}, &b.fc1_bias}},
        {"mlp.linear_fc2.weight", {{h, i}, &b.fc2}}, {"mlp.linear_fc2.bias", {{h}, &b.fc2_bias}},
    };
    for (const auto& [name, s] : items) visit(block(l, name), s.first, s.first, *s.second);
  }
  auto merger = [&](const std::function<std::string(const char*)>& name, int64_t norm_width, PatchMergerWeights& p) {
    visit(name("norm.weight"), {norm_width}, {norm_width}, p.norm);
    visit(name("norm.bias"), {norm_width}, {norm_width}, p.norm_bias);
    visit(name("linear_fc1.weight"), {m, m}, {m, m}, p.fc1);
    visit(name("linear_fc1.bias"), {m}, {m}, p.fc1_bias);
    visit(name("linear_fc2.weight"), {o, m}, {o, m}, p.fc2);
    visit(name("linear_fc2.bias"), {o}, {o}, p.fc2_bias);
  };
  merger([](const char* s) { return concat("merger.", s); }, h, w.merger);
  w.deepstack.resize(c.deepstack_visual_indexes.size());
  for (size_t k = 0; k < w.deepstack.size(); ++k)
    merger([k](const char* s) { return deepstack(k, s); }, m, w.deepstack[k]);
}

}  // namespace

std::vector<TensorDecl> qwen3_vl_vision_weight_decls(const Qwen3VLVisionConfig& c, DType dtype) {
  std::vector<TensorDecl> d;
  Qwen3VLVisionWeights scratch;
  for_each_tensor(c, scratch, [&](const std::string& name, const Shape&, const Shape& upstream, Tensor&) {
    d.push_back({kPrefix + name, upstream, dtype, ""});
  });
  return d;
}

Qwen3VLVisionWeights load_qwen3_vl_vision_weights(const Qwen3VLVisionConfig& c, const fs::path& path, DType dtype,
                                                  Device device) {
  const safetensors::Checkpoint ckpt = safetensors::Checkpoint::open(path);
  std::string prefix;
  for (const char* p : {kPrefix, "visual.", ""})
    if (ckpt.contains(std::string(p) + "patch_embed.proj.weight")) {
      prefix = p;
      break;
    }
  Qwen3VLVisionWeights w;
  for_each_tensor(c, w, [&](const std::string& name, const Shape& shape, const Shape& upstream, Tensor& slot) {
    const std::string full = prefix + name;
    if (!ckpt.contains(full))
      FK_FAIL(FK_ERR_INVALID_ARGUMENT, "checkpoint ", ckpt.path().string(), " has no tensor '", full,
              "', which the Qwen3-VL vision tower of this config needs");
    const safetensors::TensorInfo& info = ckpt.info(full);
    FK_CHECK(info.shape == upstream, "checkpoint tensor '", full, "' has shape ",
             shape_to_string(info.shape.data(), static_cast<int>(info.shape.size())), " but the config implies ",
             shape_to_string(upstream.data(), static_cast<int>(upstream.size())));
    FK_CHECK(info.dtype && dtype_is_float(*info.dtype), "checkpoint tensor '", full, "' has dtype ", info.dtype_name,
             "; weights load from F32, BF16 or F16");
    const TensorView src = ckpt.view(full);
    Tensor host = Tensor::empty(shape, dtype);
    const size_t es = host.view().element_size(), in_es = src.element_size();
    for (int64_t e = 0; e < src.numel(); ++e)
      store_element(static_cast<char*>(host.data()) + static_cast<size_t>(e) * es, dtype,
                    load_element(static_cast<const char*>(src.data) + static_cast<size_t>(e) * in_es, src.dtype));
    slot = device.is_cpu() ? host : host.to(device);
  });
  return w;
}

Qwen3VLVisionWeights random_qwen3_vl_vision_weights(const Qwen3VLVisionConfig& c, DType dtype, Device device,
                                                    uint64_t seed, void* stream) {
  Qwen3VLVisionWeights w;
  uint64_t stream_id = 0;
  for_each_tensor(c, w, [&](const std::string& name, const Shape& shape, const Shape&, Tensor& slot) {
    float lo = -0.1f, hi = 0.1f;  // biases
    if (shape.size() == 2 && name.find("pos_embed") != std::string::npos) {
      lo = -0.5f, hi = 0.5f;
    } else if (shape.size() == 2) {
      const float a = static_cast<float>(std::sqrt(3.0 / static_cast<double>(shape[1])));
      lo = -a, hi = a;
    } else if (name.find("norm") != std::string::npos && name.find(".weight") != std::string::npos) {
      lo = 0.9f, hi = 1.1f;
    }
    slot = Tensor::empty(shape, dtype, device, stream);
    fill_uniform(slot.view(), seed, stream_id++, lo, hi, stream);
  });
  return w;
}

}  // namespace fk::models::vlm
