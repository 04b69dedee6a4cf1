#include "models/diffusion/flux/flux_weights.h"

#include <cmath>
#include <functional>
#include <string>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/random.h"
#include "fk/status.h"
#include "models/checkpoint_tensor.h"

namespace fk::models::diffusion {
namespace {

namespace fs = std::filesystem;

enum class Kind { projection, bias, norm };

// One tensor of the model: the upstream tensors stacked along dim 0 to make it (one name
// for most; q, k, v for the fused projections), each of shape `part`.
using Source = std::function<Tensor(const std::vector<std::string>& names, const Shape& part, Kind kind)>;

// Walks the model's tensors in one order, asking `src` for each: the declarations, the
// checkpoint reader and the random fill all follow this one description of the layout.
FluxWeights build(const FluxConfig& c, const Source& src) {
  const int64_t h = c.hidden(), m = c.mlp_hidden(), d = c.attention_head_dim, t = c.timestep_channels;
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    return FluxLinear{src({name + ".weight"}, {out, in}, Kind::projection), src({name + ".bias"}, {out}, Kind::bias)};
  };
  auto fused = [&](const std::string& prefix, const char* q, const char* k, const char* v) {
    const std::string p = prefix + ".";
    return FluxLinear{src({p + q + ".weight", p + k + ".weight", p + v + ".weight"}, {h, h}, Kind::projection),
                      src({p + q + ".bias", p + k + ".bias", p + v + ".bias"}, {h}, Kind::bias)};
  };
  auto norm = [&](const std::string& name) { return src({name + ".weight"}, {d}, Kind::norm); };
  FluxWeights w;
  w.x_embedder = linear("x_embedder", h, c.in_channels);
  w.context_embedder = linear("context_embedder", h, c.joint_attention_dim);
  w.time_1 = linear("time_text_embed.timestep_embedder.linear_1", h, t);
  w.time_2 = linear("time_text_embed.timestep_embedder.linear_2", h, h);
  if (c.guidance_embeds) {
    w.guidance_1 = linear("time_text_embed.guidance_embedder.linear_1", h, t);
    w.guidance_2 = linear("time_text_embed.guidance_embedder.linear_2", h, h);
  }
  w.text_1 = linear("time_text_embed.text_embedder.linear_1", h, c.pooled_projection_dim);
  w.text_2 = linear("time_text_embed.text_embedder.linear_2", h, h);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = "transformer_blocks." + std::to_string(l) + ".";
    FluxDoubleBlockWeights b;
    b.norm1 = linear(p + "norm1.linear", 6 * h, h);
    b.norm1_context = linear(p + "norm1_context.linear", 6 * h, h);
    b.qkv = fused(p + "attn", "to_q", "to_k", "to_v");
    b.add_qkv = fused(p + "attn", "add_q_proj", "add_k_proj", "add_v_proj");
    b.norm_q = norm(p + "attn.norm_q");
    b.norm_k = norm(p + "attn.norm_k");
    b.norm_added_q = norm(p + "attn.norm_added_q");
    b.norm_added_k = norm(p + "attn.norm_added_k");
    b.to_out = linear(p + "attn.to_out.0", h, h);
    b.to_add_out = linear(p + "attn.to_add_out", h, h);
    b.ff_up = linear(p + "ff.net.0.proj", m, h);
    b.ff_down = linear(p + "ff.net.2", h, m);
    b.ff_context_up = linear(p + "ff_context.net.0.proj", m, h);
    b.ff_context_down = linear(p + "ff_context.net.2", h, m);
    w.double_blocks.push_back(std::move(b));
  }
  for (int64_t l = 0; l < c.num_single_layers; ++l) {
    const std::string p = "single_transformer_blocks." + std::to_string(l) + ".";
    FluxSingleBlockWeights b;
    b.norm = linear(p + "norm.linear", 3 * h, h);
    b.qkv = fused(p + "attn", "to_q", "to_k", "to_v");
    b.norm_q = norm(p + "attn.norm_q");
    b.norm_k = norm(p + "attn.norm_k");
    b.proj_mlp = linear(p + "proj_mlp", m, h);
    b.proj_out = linear(p + "proj_out", h, h + m);
    w.single_blocks.push_back(std::move(b));
  }
  w.norm_out = linear("norm_out.linear", 2 * h, h);
  w.proj_out = linear("proj_out", c.out_features(), h);
  return w;
}

}  // namespace

std::vector<TensorDecl> flux_weight_decls(const FluxConfig& c, DType dtype) {
  std::vector<TensorDecl> decls;
  build(c, [&](const std::vector<std::string>& names, const Shape& part, Kind) {
    for (const std::string& n : names) decls.push_back({n, part, dtype, ""});
    return Tensor{};
  });
  return decls;
}

FluxWeights load_flux_weights(const FluxConfig& c, const fs::path& path, DType dtype, Device device) {
  const safetensors::Checkpoint ckpt = safetensors::Checkpoint::open(path);
  return build(c, [&](const std::vector<std::string>& names, const Shape& part, Kind) {
    Shape whole = part;
    whole[0] *= static_cast<int64_t>(names.size());
    Tensor host = Tensor::empty(whole, dtype);
    for (size_t i = 0; i < names.size(); ++i) {
      convert_rows(checked_float_tensor(ckpt, names[i], part, "a FLUX transformer of this config"), host,
                   static_cast<int64_t>(i) * part[0]);
    }
    return device.is_cpu() ? host : host.to(device);
  });
}

FluxWeights random_flux_weights(const FluxConfig& c, DType dtype, Device device, uint64_t seed, void* stream) {
  uint64_t counter = 0;
  return build(c, [&](const std::vector<std::string>& names, const Shape& part, Kind kind) {
    Shape whole = part;
    whole[0] *= static_cast<int64_t>(names.size());
    Tensor t = Tensor::empty(whole, dtype, device, stream);
    float lo = -0.1f, hi = 0.1f;  // biases
    if (kind == Kind::projection) {
      hi = static_cast<float>(std::sqrt(3.0 / static_cast<double>(part[1])));  // std 1/sqrt(fan_in)
      lo = -hi;
    } else if (kind == Kind::norm) {
      lo = 0.9f, hi = 1.1f;
    }
    fill_uniform(t.view(), seed, counter++, lo, hi, stream);
    return t;
  });
}

}  // namespace fk::models::diffusion
