#include "models/world/oasis/oasis_weights.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <string>

#include "core/safetensors/safetensors.h"
#include "fk/random.h"
#include "models/checkpoint_tensor.h"

namespace fk::models::world {
namespace {

namespace fs = std::filesystem;

enum class Kind { projection, bias };

// One tensor: its checkpoint name and shape (`stored`), and the shape the model keeps it in
// (`kept`, the same number of elements).
using Source = std::function<Tensor(const std::string& name, const Shape& stored, const Shape& kept, Kind kind)>;

// Walks the model's tensors in one order, asking `src` for each: the declarations, the
// checkpoint reader and the random fill all follow this one description of the layout.
OasisWeights build(const OasisConfig& c, const Source& src) {
  const int64_t h = c.hidden_size, m = c.mlp_hidden(), p = c.patch_size;
  auto linear = [&](const std::string& name, int64_t out, int64_t in, bool bias = true) {
    OasisLinear l;
    l.weight = src(name + ".weight", {out, in}, {out, in}, Kind::projection);
    if (bias) l.bias = src(name + ".bias", {out}, {out}, Kind::bias);
    return l;
  };
  OasisWeights w;
  w.x_embedder.weight =
      src("x_embedder.proj.weight", {h, c.in_channels, p, p}, {h, c.patch_features()}, Kind::projection);
  w.x_embedder.bias = src("x_embedder.proj.bias", {h}, {h}, Kind::bias);
  w.t_1 = linear("t_embedder.mlp.0", h, c.timestep_channels);
  w.t_2 = linear("t_embedder.mlp.2", h, h);
  if (c.external_cond_dim > 0) w.external_cond = linear("external_cond", h, c.external_cond_dim);
  for (int64_t l = 0; l < c.depth; ++l) {
    const std::string b = "blocks." + std::to_string(l) + ".";
    auto half = [&](const std::string& s) {
      OasisHalfBlockWeights hb;
      hb.modulation = linear(b + s + "_adaLN_modulation.1", 6 * h, h);
      hb.qkv = linear(b + s + "_attn.to_qkv", 3 * h, h, false);
      hb.out = linear(b + s + "_attn.to_out", h, h);
      hb.fc1 = linear(b + s + "_mlp.fc1", m, h);
      hb.fc2 = linear(b + s + "_mlp.fc2", h, m);
      return hb;
    };
    OasisBlockWeights bw;
    bw.spatial = half("s");
    bw.temporal = half("t");
    w.blocks.push_back(std::move(bw));
  }
  w.final_modulation = linear("final_layer.adaLN_modulation.1", 2 * h, h);
  w.final_linear = linear("final_layer.linear", p * p * c.in_channels, h);
  return w;
}

// The final linear's rows (or bias entries) reordered from upstream's (row, column, channel)
// of an output patch to (channel, row, column), the order of the patch embedding's input: the
// prediction then lines up element for element with the noisy patches it is combined with.
Tensor channel_first_patch_rows(const Tensor& t, const OasisConfig& c) {
  const int64_t p = c.patch_size, ch = c.in_channels, width = t.rank() == 1 ? 1 : t.size(1);
  const size_t row_bytes = static_cast<size_t>(width) * dtype_size(t.dtype());
  Tensor out = Tensor::empty(t.shape(), t.dtype());
  for (int64_t i = 0; i < p; ++i)
    for (int64_t j = 0; j < p; ++j)
      for (int64_t k = 0; k < ch; ++k) {
        const int64_t from = (i * p + j) * ch + k, to = (k * p + i) * p + j;
        std::memcpy(static_cast<char*>(out.data()) + static_cast<size_t>(to) * row_bytes,
                    static_cast<const char*>(t.data()) + static_cast<size_t>(from) * row_bytes, row_bytes);
      }
  return out;
}

}  // namespace

std::vector<TensorDecl> oasis_weight_decls(const OasisConfig& c, DType dtype) {
  std::vector<TensorDecl> decls;
  build(c, [&](const std::string& name, const Shape& stored, const Shape&, Kind) {
    decls.push_back({name, stored, dtype, ""});
    return Tensor{};
  });
  return decls;
}

OasisWeights load_oasis_weights(const OasisConfig& c, const fs::path& path, DType dtype, Device device) {
  const safetensors::Checkpoint ckpt = safetensors::Checkpoint::open(path);
  return build(c, [&](const std::string& name, const Shape& stored, const Shape& kept, Kind) {
    Tensor host = Tensor::empty(kept, dtype);
    convert_rows(checked_float_tensor(ckpt, name, stored, "an Oasis DiT of this config"), host);
    if (name.rfind("final_layer.linear.", 0) == 0) host = channel_first_patch_rows(host, c);
    return device.is_cpu() ? host : host.to(device);
  });
}

OasisWeights random_oasis_weights(const OasisConfig& c, DType dtype, Device device, uint64_t seed, void* stream) {
  uint64_t counter = 0;
  return build(c, [&](const std::string&, const Shape&, const Shape& kept, Kind kind) {
    Tensor t = Tensor::empty(kept, dtype, device, stream);
    float lo = -0.1f, hi = 0.1f;  // biases
    if (kind == Kind::projection) {
      hi = static_cast<float>(std::sqrt(3.0 / static_cast<double>(kept[1])));  // std 1/sqrt(fan_in)
      lo = -hi;
    }
    fill_uniform(t.view(), seed, counter++, lo, hi, stream);
    return t;
  });
}

}  // namespace fk::models::world
