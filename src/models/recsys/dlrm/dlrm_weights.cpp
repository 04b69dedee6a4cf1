#include "models/recsys/dlrm/dlrm_weights.h"

#include <cmath>
#include <cstring>
#include <string>

#include "core/safetensors/safetensors.h"
#include "fk/random.h"
#include "fk/status.h"
#include "models/checkpoint_tensor.h"

namespace fk::models::recsys {
namespace {

namespace fs = std::filesystem;

std::string table_name(int64_t t) { return concat("emb_l.", t, ".weight"); }
// Layer l of an MLP: the Linear at index 2l of its nn.Sequential.
std::string mlp_name(const char* mlp, int64_t l, const char* what) { return concat(mlp, ".", 2 * l, ".", what); }

// Each MLP layer's (in, out), in order.
std::vector<std::pair<int64_t, int64_t>> mlp_shapes(int64_t in, const std::vector<int64_t>& widths) {
  std::vector<std::pair<int64_t, int64_t>> s;
  for (int64_t w : widths) {
    s.emplace_back(in, w);
    in = w;
  }
  return s;
}

constexpr const char* kNeededBy = "a DLRM of this config";

Tensor read_host(const safetensors::Checkpoint& ckpt, const std::string& name, const Shape& shape, DType dtype) {
  Tensor host = Tensor::empty(shape, dtype);
  convert_rows(checked_float_tensor(ckpt, name, shape, kNeededBy), host);
  return host;
}

// An [out, in] host matrix copied into rows of dlrm_padded(in) elements (zeros after `in`).
Tensor padded_rows(const Tensor& m) {
  const int64_t out = m.size(0), in = m.size(1), padded = dlrm_padded(in);
  Tensor p = Tensor::zeros({out, padded}, m.dtype());
  const size_t es = dtype_size(m.dtype());
  for (int64_t r = 0; r < out; ++r)
    std::memcpy(static_cast<char*>(p.data()) + static_cast<size_t>(r * padded) * es,
                static_cast<const char*>(m.data()) + static_cast<size_t>(r * in) * es, static_cast<size_t>(in) * es);
  return p;
}

Tensor on_device(const Tensor& host, Device device) { return device.is_cpu() ? host : host.to(device); }

std::vector<DlrmLinear> load_mlp(const safetensors::Checkpoint& ckpt, const char* mlp, int64_t in,
                                 const std::vector<int64_t>& widths, DType dtype, Device device) {
  std::vector<DlrmLinear> layers;
  int64_t l = 0;
  for (const auto& [fan_in, out] : mlp_shapes(in, widths)) {
    DlrmLinear layer;
    layer.in = fan_in;
    layer.weight = on_device(padded_rows(read_host(ckpt, mlp_name(mlp, l, "weight"), {out, fan_in}, dtype)), device);
    layer.bias = on_device(read_host(ckpt, mlp_name(mlp, l, "bias"), {out}, dtype), device);
    layers.push_back(std::move(layer));
    ++l;
  }
  return layers;
}

class DlrmRandomFill {
 public:
  DlrmRandomFill(DType dtype, Device device, uint64_t seed, void* stream)
      : dtype_(dtype), device_(device), seed_(seed), stream_(stream) {}
  Tensor uniform(const Shape& shape, float bound) {
    Tensor t = Tensor::empty(shape, dtype_, device_, stream_);
    fill_uniform(t.view(), seed_, offset_++, -bound, bound, stream_);
    return t;
  }
  std::vector<DlrmLinear> mlp(int64_t in, const std::vector<int64_t>& widths) {
    std::vector<DlrmLinear> layers;
    for (const auto& [fan_in, out] : mlp_shapes(in, widths)) {
      DlrmLinear layer;
      layer.in = fan_in;
      // Standard deviation 1/sqrt(fan_in): uniform over +-sqrt(3 / fan_in). The padding
      // columns get values too; the GEMM never reads them.
      layer.weight =
          uniform({out, dlrm_padded(fan_in)}, static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in))));
      layer.bias = uniform({out}, 0.1f);
      layers.push_back(std::move(layer));
    }
    return layers;
  }

 private:
  DType dtype_;
  Device device_;
  uint64_t seed_;
  uint64_t offset_ = 0;
  void* stream_;
};

}  // namespace

TensorView DlrmLinear::weight_view() const {
  TensorView v = weight.view();
  v.shape[1] = in;
  return v;
}

std::vector<TensorDecl> dlrm_weight_decls(const DlrmConfig& c, DType dtype) {
  std::vector<TensorDecl> d;
  for (int64_t t = 0; t < c.num_tables(); ++t)
    d.push_back({table_name(t),
                 {c.table_sizes[static_cast<size_t>(t)], c.embedding_dim},
                 dtype,
                 concat("embedding table of sparse feature ", t)});
  const auto add_mlp = [&](const char* mlp, int64_t in, const std::vector<int64_t>& widths) {
    int64_t l = 0;
    for (const auto& [fan_in, out] : mlp_shapes(in, widths)) {
      d.push_back({mlp_name(mlp, l, "weight"), {out, fan_in}, dtype, ""});
      d.push_back({mlp_name(mlp, l, "bias"), {out}, dtype, ""});
      ++l;
    }
  };
  add_mlp("bot_l", c.dense_features, c.bottom_mlp);
  add_mlp("top_l", c.interaction_features(), c.top_mlp);
  return d;
}

DlrmWeights load_dlrm_weights(const DlrmConfig& c, const fs::path& path, DType dtype, Device device) {
  const safetensors::Checkpoint ckpt = safetensors::Checkpoint::open(path);
  DlrmWeights w;
  for (int64_t t = 0; t < c.num_tables(); ++t)
    w.tables.push_back(on_device(
        read_host(ckpt, table_name(t), {c.table_sizes[static_cast<size_t>(t)], c.embedding_dim}, dtype), device));
  w.bottom = load_mlp(ckpt, "bot_l", c.dense_features, c.bottom_mlp, dtype, device);
  w.top = load_mlp(ckpt, "top_l", c.interaction_features(), c.top_mlp, dtype, device);
  return w;
}

DlrmWeights random_dlrm_weights(const DlrmConfig& c, DType dtype, Device device, uint64_t seed, void* stream) {
  DlrmRandomFill f(dtype, device, seed, stream);
  DlrmWeights w;
  const float table_bound = static_cast<float>(std::sqrt(3.0 / static_cast<double>(c.embedding_dim)));
  for (int64_t rows : c.table_sizes) w.tables.push_back(f.uniform({rows, c.embedding_dim}, table_bound));
  w.bottom = f.mlp(c.dense_features, c.bottom_mlp);
  w.top = f.mlp(c.interaction_features(), c.top_mlp);
  return w;
}

}  // namespace fk::models::recsys
