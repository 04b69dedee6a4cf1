#include "models/science/openfold3/openfold3_weights.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "core/safetensors/safetensors.h"
#include "fk/element.h"
#include "fk/random.h"
#include "fk/status.h"
#include "models/checkpoint_tensor.h"

namespace fk::models::science {
namespace {

namespace fs = std::filesystem;

// One op weight and the upstream tensors it is made of, stacked along the first dimension.
struct Group {
  TensorView* dst;
  std::vector<std::pair<std::string, Shape>> parts;
};

// Block i's groups; `w` receives the views (a scratch struct when only declaring).
std::vector<Group> block_groups(const OpenFold3Config& c, int64_t i, ops::PairformerBlockWeights& w) {
  const std::string p = openfold3_block_prefix(i);
  const int64_t Cz = c.c_z, Cs = c.c_s, C = c.c_hidden_mul;
  const int64_t th = c.no_heads_pair, thd = c.no_heads_pair * c.c_hidden_pair_att;
  const int64_t sh = c.no_heads_pair_bias, shd = c.no_heads_pair_bias * c.c_hidden_pair_bias;
  std::vector<Group> g;
  auto one = [&](TensorView* dst, const std::string& name, Shape shape) { g.push_back({dst, {{name, shape}}}); };
  auto layer_norm = [&](const std::string& m, int64_t n, TensorView* weight, TensorView* bias) {
    one(weight, m + ".weight", {n});
    one(bias, m + ".bias", {n});
  };
  auto tri_mul = [&](const std::string& m, ops::TriangleMultiplicationWeights& t) {
    layer_norm(m + ".layer_norm_in", Cz, &t.ln_in_weight, &t.ln_in_bias);
    g.push_back({&t.in_weight,
                 {{m + ".linear_a_g.weight", {C, Cz}},
                  {m + ".linear_a_p.weight", {C, Cz}},
                  {m + ".linear_b_g.weight", {C, Cz}},
                  {m + ".linear_b_p.weight", {C, Cz}},
                  {m + ".linear_g.weight", {Cz, Cz}}}});
    layer_norm(m + ".layer_norm_out", C, &t.ln_out_weight, &t.ln_out_bias);
    one(&t.out_weight, m + ".linear_z.weight", {Cz, C});
  };
  auto tri_att = [&](const std::string& m, ops::TriangleAttentionWeights& t) {
    layer_norm(m + ".layer_norm", Cz, &t.ln_weight, &t.ln_bias);
    g.push_back({&t.qkvg_weight,
                 {{m + ".mha.linear_q.weight", {thd, Cz}},
                  {m + ".mha.linear_k.weight", {thd, Cz}},
                  {m + ".mha.linear_v.weight", {thd, Cz}},
                  {m + ".mha.linear_g.weight", {thd, Cz}}}});
    one(&t.bias_weight, m + ".linear_z.weight", {th, Cz});
    one(&t.out_weight, m + ".mha.linear_o.weight", {Cz, thd});
  };
  auto transition = [&](const std::string& m, int64_t ch, ops::TransitionWeights& t) {
    const int64_t f = c.transition_n * ch;
    layer_norm(m + ".layer_norm", ch, &t.ln_weight, &t.ln_bias);
    g.push_back({&t.in_weight, {{m + ".swiglu.linear_a.weight", {f, ch}}, {m + ".swiglu.linear_b.weight", {f, ch}}}});
    one(&t.out_weight, m + ".linear_out.weight", {ch, f});
  };
  tri_mul(p + "pair_stack.tri_mul_out", w.tri_mul_out);
  tri_mul(p + "pair_stack.tri_mul_in", w.tri_mul_in);
  tri_att(p + "pair_stack.tri_att_start", w.tri_att_start);
  tri_att(p + "pair_stack.tri_att_end", w.tri_att_end);
  transition(p + "pair_stack.pair_transition", Cz, w.pair_transition);
  {
    const std::string m = p + "attn_pair_bias";
    ops::SingleAttentionPairBiasWeights& t = w.attn_pair_bias;
    layer_norm(m + ".layer_norm_a", Cs, &t.ln_single_weight, &t.ln_single_bias);
    layer_norm(m + ".layer_norm_z", Cz, &t.ln_pair_weight, &t.ln_pair_bias);
    one(&t.q_weight, m + ".mha.linear_q.weight", {shd, Cs});
    one(&t.q_bias, m + ".mha.linear_q.bias", {shd});
    g.push_back({&t.kvg_weight,
                 {{m + ".mha.linear_k.weight", {shd, Cs}},
                  {m + ".mha.linear_v.weight", {shd, Cs}},
                  {m + ".mha.linear_g.weight", {shd, Cs}}}});
    one(&t.bias_weight, m + ".linear_z.weight", {sh, Cz});
    one(&t.out_weight, m + ".mha.linear_o.weight", {Cs, shd});
  }
  transition(p + "single_transition", Cs, w.single_transition);
  return g;
}

// A host f32 tensor converted to `dtype` on `device` (one rounding per element).
Tensor to_model(const Tensor& f32, DType dtype, Device device) {
  Tensor out = Tensor::empty(f32.shape(), dtype);
  const size_t es = out.view().element_size();
  const float* in = f32.data_as<float>();
  for (int64_t i = 0; i < f32.numel(); ++i)
    store_element(static_cast<char*>(out.data()) + static_cast<size_t>(i) * es, dtype, in[i]);
  return device.is_cpu() ? out : out.to(device);
}

bool ends_with(const std::string& s, const char* tail) {
  const size_t n = std::strlen(tail);
  return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
}

}  // namespace

std::string openfold3_block_prefix(int64_t block) {
  return "pairformer_stack.blocks." + std::to_string(block) + ".";
}

std::vector<TensorDecl> openfold3_weight_decls(const OpenFold3Config& c) {
  std::vector<TensorDecl> decls;
  ops::PairformerBlockWeights scratch{};
  for (int64_t i = 0; i < c.no_blocks; ++i)
    for (const Group& g : block_groups(c, i, scratch))
      for (const auto& [name, shape] : g.parts) decls.push_back({name, shape, DType::f32, ""});
  return decls;
}

OpenFold3Weights build_openfold3_weights(const OpenFold3Config& c, const OpenFold3TensorSource& source, DType dtype,
                                         Device device) {
  OpenFold3Weights w;
  w.blocks.resize(static_cast<size_t>(c.no_blocks));
  for (int64_t i = 0; i < c.no_blocks; ++i) {
    OpenFold3Block& b = w.blocks[static_cast<size_t>(i)];
    const std::vector<Group> groups = block_groups(c, i, b.ops);
    b.owned.reserve(groups.size());
    for (const Group& g : groups) {
      Shape shape = g.parts.front().second;
      shape[0] = 0;
      for (const auto& part : g.parts) shape[0] += part.second[0];
      Tensor fused = Tensor::empty(shape, DType::f32);
      size_t at = 0;
      for (const auto& [name, part_shape] : g.parts) {
        const Tensor t = source(name, part_shape);
        expect_source_tensor(t, name, part_shape, "openfold3");
        std::memcpy(fused.data_as<float>() + at, t.data_as<float>(), static_cast<size_t>(t.numel()) * sizeof(float));
        at += static_cast<size_t>(t.numel());
      }
      b.owned.push_back(to_model(fused, dtype, device));
      *g.dst = b.owned.back().view();
    }
  }
  return w;
}

OpenFold3Weights load_openfold3_weights(const OpenFold3Config& c, const fs::path& path, DType dtype, Device device) {
  const safetensors::Checkpoint ckpt = safetensors::Checkpoint::open(path);
  // OpenFold3's released weights name the stack "pairformer_stack..."; its Lightning and
  // DeepSpeed training checkpoints prefix every name with "model.". Either loads.
  const bool prefixed = !ckpt.contains(openfold3_block_prefix(0) + "attn_pair_bias.linear_z.weight") &&
                        ckpt.contains("model." + openfold3_block_prefix(0) + "attn_pair_bias.linear_z.weight");
  const OpenFold3TensorSource source = [&](const std::string& upstream, const Shape& shape) {
    return read_f32_tensor(ckpt, prefixed ? "model." + upstream : upstream, shape,
                           "an OpenFold3 Pairformer stack of this config");
  };
  return build_openfold3_weights(c, source, dtype, device);
}

std::map<std::string, Tensor> random_openfold3_state_dict(const OpenFold3Config& c, uint64_t seed) {
  std::map<std::string, Tensor> sd;
  uint64_t offset = 0;
  for (const TensorDecl& d : openfold3_weight_decls(c)) {
    Tensor t = Tensor::empty(d.shape, DType::f32);
    const bool norm = d.name.find("layer_norm") != std::string::npos;
    if (norm && ends_with(d.name, ".weight")) {
      fill_uniform(t, seed, offset, 0.5f, 1.5f);
    } else if (d.shape.size() == 1) {  // LayerNorm biases, linear_q's bias
      fill_uniform(t, seed, offset, -0.2f, 0.2f);
    } else {
      const float a = static_cast<float>(std::sqrt(3.0 / static_cast<double>(d.shape[1])));
      fill_uniform(t, seed, offset, -a, a);
    }
    ++offset;
    sd.emplace(d.name, std::move(t));
  }
  return sd;
}

OpenFold3Weights random_openfold3_weights(const OpenFold3Config& c, uint64_t seed, DType dtype, Device device) {
  const std::map<std::string, Tensor> sd = random_openfold3_state_dict(c, seed);
  const OpenFold3TensorSource source = [&](const std::string& name, const Shape&) { return sd.at(name); };
  return build_openfold3_weights(c, source, dtype, device);
}

}  // namespace fk::models::science
