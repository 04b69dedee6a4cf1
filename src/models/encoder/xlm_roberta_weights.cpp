#include "models/encoder/xlm_roberta_weights.h"

#include <cmath>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/random.h"
#include "fk/status.h"
#include "models/checkpoint_tensor.h"
#include "models/encoder/bge_m3_heads.h"
#include "models/encoder/encoder_checkpoint.h"

namespace fk::models::encoder {
namespace {

namespace fs = std::filesystem;

std::string layer_name(int64_t l, const char* what) { return concat("encoder.layer.", l, ".", what); }

class Reader {
 public:
  Reader(const safetensors::Checkpoint& ckpt, DType dtype, Device device)
      : ckpt_(ckpt), dtype_(dtype), device_(device) {
    for (const char* prefix : {"roberta.", "bert."})
      if (!ckpt.contains("embeddings.word_embeddings.weight") &&
          ckpt.contains(std::string(prefix) + "embeddings.word_embeddings.weight"))
        prefix_ = prefix;
  }

  Tensor tensor(const std::string& name, const Shape& shape) { return stacked({name}, shape); }
  // A tensor outside the encoder (no prefix): ColBERT's "linear.weight".
  Tensor unprefixed(const std::string& name, const Shape& shape) {
    Tensor host = Tensor::empty(shape, dtype_);
    convert_rows(checked_float_tensor(ckpt_, name, shape, "a ColBERT checkpoint of this config"), host, 0);
    return device_.is_cpu() ? host : host.to(device_);
  }

  // Upstream tensors stacked along dim 0 (q, k, v into one qkv).
  Tensor stacked(const std::vector<std::string>& names, const Shape& part) {
    Shape whole = part;
    whole[0] *= static_cast<int64_t>(names.size());
    Tensor host = Tensor::empty(whole, dtype_);
    for (size_t i = 0; i < names.size(); ++i) {
      convert_rows(checked_float_tensor(ckpt_, prefix_ + names[i], part, "an XLM-RoBERTa model of this config"), host,
                   static_cast<int64_t>(i) * part[0]);
    }
    return device_.is_cpu() ? host : host.to(device_);
  }

 private:
  const safetensors::Checkpoint& ckpt_;
  DType dtype_;
  Device device_;
  std::string prefix_;
};

class RandomFill {
 public:
  RandomFill(DType dtype, Device device, uint64_t seed, void* stream)
      : dtype_(dtype), device_(device), seed_(seed), stream_(stream) {}
  Tensor uniform(const Shape& shape, float lo, float hi) {
    Tensor t = Tensor::empty(shape, dtype_, device_, stream_);
    fill_uniform(t.view(), seed_, offset_++, lo, hi, stream_);
    return t;
  }
  // Standard deviation 1/sqrt(fan_in) (uniform over +-sqrt(3 / fan_in)).
  Tensor projection(int64_t out, int64_t in) {
    const float a = static_cast<float>(std::sqrt(3.0 / static_cast<double>(in)));
    return uniform({out, in}, -a, a);
  }
  Tensor bias(int64_t n) { return uniform({n}, -0.1f, 0.1f); }
  Tensor norm(int64_t n) { return uniform({n}, 0.9f, 1.1f); }

 private:
  DType dtype_;
  Device device_;
  uint64_t seed_;
  uint64_t offset_ = 0;
  void* stream_;
};

}  // namespace

std::vector<TensorDecl> xlm_roberta_weight_decls(const XlmRobertaConfig& c, DType dtype) {
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  std::vector<TensorDecl> d = {
      {"embeddings.word_embeddings.weight", {c.vocab_size, h}, dtype, ""},
      {"embeddings.position_embeddings.weight", {c.max_position_embeddings, h}, dtype, ""},
      {"embeddings.token_type_embeddings.weight", {c.type_vocab_size, h}, dtype, ""},
      {"embeddings.LayerNorm.weight", {h}, dtype, ""},
      {"embeddings.LayerNorm.bias", {h}, dtype, ""},
  };
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    for (const char* p : {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
      d.push_back({layer_name(l, p) + std::string(".weight"), {h, h}, dtype, ""});
      d.push_back({layer_name(l, p) + std::string(".bias"), {h}, dtype, ""});
    }
    d.push_back({layer_name(l, "attention.output.LayerNorm.weight"), {h}, dtype, ""});
    d.push_back({layer_name(l, "attention.output.LayerNorm.bias"), {h}, dtype, ""});
    d.push_back({layer_name(l, "intermediate.dense.weight"), {i, h}, dtype, ""});
    d.push_back({layer_name(l, "intermediate.dense.bias"), {i}, dtype, ""});
    d.push_back({layer_name(l, "output.dense.weight"), {h, i}, dtype, ""});
    d.push_back({layer_name(l, "output.dense.bias"), {h}, dtype, ""});
    d.push_back({layer_name(l, "output.LayerNorm.weight"), {h}, dtype, ""});
    d.push_back({layer_name(l, "output.LayerNorm.bias"), {h}, dtype, ""});
  }
  if (c.colbert) {  // HF_ColBERT's names: the encoder under "bert.", the projection beside it
    for (TensorDecl& t : d) t.name = "bert." + t.name;
    d.push_back({"linear.weight", {c.colbert->dim, h}, dtype, "ColBERT's projection (HF_ColBERT.linear, no bias)"});
    return d;
  }
  d.push_back({"sparse_linear.weight", {1, h}, dtype, "BGE-M3 sparse head (file sparse_linear.*: weight)"});
  d.push_back({"sparse_linear.bias", {1}, dtype, "BGE-M3 sparse head (file sparse_linear.*: bias)"});
  d.push_back({"colbert_linear.weight", {h, h}, dtype, "BGE-M3 ColBERT head (file colbert_linear.*: weight)"});
  d.push_back({"colbert_linear.bias", {h}, dtype, "BGE-M3 ColBERT head (file colbert_linear.*: bias)"});
  return d;
}

XlmRobertaWeights load_xlm_roberta_weights(const XlmRobertaConfig& c, const fs::path& path, DType dtype, Device device,
                                           void* stream) {
  (void)stream;  // uploads are synchronous copies (Tensor::to)
  const safetensors::Checkpoint ckpt = open_encoder_checkpoint(path);
  Reader r(ckpt, dtype, device);
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  XlmRobertaWeights w;
  w.word = r.tensor("embeddings.word_embeddings.weight", {c.vocab_size, h});
  w.position = r.tensor("embeddings.position_embeddings.weight", {c.max_position_embeddings, h});
  w.token_type = r.tensor("embeddings.token_type_embeddings.weight", {c.type_vocab_size, h});
  w.embed_norm = r.tensor("embeddings.LayerNorm.weight", {h});
  w.embed_norm_bias = r.tensor("embeddings.LayerNorm.bias", {h});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    EncoderLayerWeights lw;
    lw.qkv = r.stacked({layer_name(l, "attention.self.query.weight"), layer_name(l, "attention.self.key.weight"),
                        layer_name(l, "attention.self.value.weight")},
                       {h, h});
    lw.qkv_bias = r.stacked({layer_name(l, "attention.self.query.bias"), layer_name(l, "attention.self.key.bias"),
                             layer_name(l, "attention.self.value.bias")},
                            {h});
    lw.attn_out = r.tensor(layer_name(l, "attention.output.dense.weight"), {h, h});
    lw.attn_out_bias = r.tensor(layer_name(l, "attention.output.dense.bias"), {h});
    lw.attn_norm = r.tensor(layer_name(l, "attention.output.LayerNorm.weight"), {h});
    lw.attn_norm_bias = r.tensor(layer_name(l, "attention.output.LayerNorm.bias"), {h});
    lw.up = r.tensor(layer_name(l, "intermediate.dense.weight"), {i, h});
    lw.up_bias = r.tensor(layer_name(l, "intermediate.dense.bias"), {i});
    lw.down = r.tensor(layer_name(l, "output.dense.weight"), {h, i});
    lw.down_bias = r.tensor(layer_name(l, "output.dense.bias"), {h});
    lw.out_norm = r.tensor(layer_name(l, "output.LayerNorm.weight"), {h});
    lw.out_norm_bias = r.tensor(layer_name(l, "output.LayerNorm.bias"), {h});
    w.layers.push_back(std::move(lw));
  }
  if (c.colbert) {
    w.colbert_projection = r.unprefixed("linear.weight", {c.colbert->dim, h});
    return w;
  }
  const fs::path folder = fs::is_directory(path) ? path : path.parent_path();
  w.heads = load_bge_m3_heads(folder, h, dtype, device);
  return w;
}

XlmRobertaWeights random_xlm_roberta_weights(const XlmRobertaConfig& c, DType dtype, Device device, uint64_t seed,
                                             void* stream) {
  RandomFill f(dtype, device, seed, stream);
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  XlmRobertaWeights w;
  w.word = f.uniform({c.vocab_size, h}, -0.5f, 0.5f);
  w.position = f.uniform({c.max_position_embeddings, h}, -0.5f, 0.5f);
  w.token_type = f.uniform({c.type_vocab_size, h}, -0.5f, 0.5f);
  w.embed_norm = f.norm(h);
  w.embed_norm_bias = f.bias(h);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    EncoderLayerWeights lw;
    lw.qkv = f.projection(3 * h, h);
    lw.qkv_bias = f.bias(3 * h);
    lw.attn_out = f.projection(h, h);
    lw.attn_out_bias = f.bias(h);
    lw.attn_norm = f.norm(h);
    lw.attn_norm_bias = f.bias(h);
    lw.up = f.projection(i, h);
    lw.up_bias = f.bias(i);
    lw.down = f.projection(h, i);
    lw.down_bias = f.bias(h);
    lw.out_norm = f.norm(h);
    lw.out_norm_bias = f.bias(h);
    w.layers.push_back(std::move(lw));
  }
  if (c.colbert) {
    w.colbert_projection = f.projection(c.colbert->dim, h);
    return w;
  }
  w.heads.sparse = f.projection(1, h);
  w.heads.sparse_bias = f.bias(1);
  w.heads.colbert = f.projection(h, h);
  w.heads.colbert_bias = f.bias(h);
  return w;
}

}  // namespace fk::models::encoder
